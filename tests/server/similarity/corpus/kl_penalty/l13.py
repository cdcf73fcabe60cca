import torch


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    """Three estimators of the per-token KL."""
    estimators = ("k1", "k2", "k3")
    if kind not in estimators:
        raise ValueError(f"{kind!r} is not a KL estimator; expected one of {estimators}")
    if log_probs.ndim != ref_log_probs.ndim:
        raise ValueError("ref_log_probs must have as many dimensions as log_probs")
    for i, (m, n) in enumerate(zip(log_probs.shape, ref_log_probs.shape)):
        if m != n:
            raise ValueError(f"ref_log_probs differs from log_probs in dimension {i}: {n} vs {m}")
    logq_minus_logp = ref_log_probs - log_probs
    return {
        "k1": lambda: -logq_minus_logp,
        "k2": lambda: 0.5 * logq_minus_logp.pow(2),
        "k3": lambda: torch.expm1(logq_minus_logp) - logq_minus_logp,
    }[kind]()
