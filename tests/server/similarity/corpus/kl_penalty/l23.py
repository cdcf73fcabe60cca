import torch


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    estimators = {}
    estimators["k1"] = lambda d: d
    estimators["k2"] = lambda d: 0.5 * torch.pow(d, 2.0)
    estimators["k3"] = lambda d: torch.expm1(-d) - (-d)
    if kind not in estimators.keys():
        raise ValueError("kind " + repr(kind) + " not understood")
    if list(log_probs.shape) != list(ref_log_probs.shape):
        raise ValueError("ref_log_probs's shape does not equal log_probs's shape")
    return estimators[kind](log_probs - ref_log_probs)
