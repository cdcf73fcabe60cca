import torch

_ESTIMATORS = {
    "k1": lambda r: r,
    "k2": lambda r: r.pow(2) / 2,
    "k3": lambda r: torch.expm1(-r) + r,
}


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    try:
        estimator = _ESTIMATORS[kind]
    except (KeyError, TypeError):
        raise ValueError("kind must be 'k1', 'k2' or 'k3'") from None
    if tuple(log_probs.shape) != tuple(ref_log_probs.shape):
        raise ValueError(
            "shape mismatch: log_probs %s vs ref_log_probs %s" % (tuple(log_probs.shape), tuple(ref_log_probs.shape))
        )
    return estimator(log_probs - ref_log_probs)
