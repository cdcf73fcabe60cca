"""Hidden reference solution for `kl-penalty`. Never sent to the jail."""

import torch

KINDS = ("k1", "k2", "k3")


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if tuple(ref_log_probs.shape) != tuple(log_probs.shape):
        raise ValueError(
            f"ref_log_probs has shape {tuple(ref_log_probs.shape)}, "
            f"expected {tuple(log_probs.shape)} (the shape of log_probs)"
        )
    log_ratio = log_probs - ref_log_probs
    if kind == "k1":
        return log_ratio
    if kind == "k2":
        return 0.5 * log_ratio**2
    # k3 = exp(d) - d - 1 with d = ref - new; expm1 keeps it exact when d is small.
    d = -log_ratio
    return torch.expm1(d) - d
