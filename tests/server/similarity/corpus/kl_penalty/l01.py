import torch


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    """Per-token KL estimate, elementwise."""
    if log_probs.shape != ref_log_probs.shape:
        raise ValueError("ref_log_probs must have the same shape as log_probs")
    diff = log_probs - ref_log_probs
    if kind == "k1":
        return diff
    elif kind == "k2":
        return 0.5 * diff * diff
    elif kind == "k3":
        return torch.expm1(-diff) + diff
    else:
        raise ValueError(f"unknown kind {kind}")
