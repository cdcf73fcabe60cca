import torch

__all__ = ["compute_kl_penalty"]


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    lp, rf = log_probs, ref_log_probs
    if lp.shape != rf.shape:
        raise ValueError("ref_log_probs must have the same shape as log_probs (no broadcasting)")
    if kind not in ("k1", "k2", "k3"):
        raise ValueError(f"kind: expected 'k1', 'k2' or 'k3', got {kind!r}")
    # all three from s = log p - log q
    s = lp - rf
    if kind == "k3":
        e = torch.expm1(-s)   # e^{-s} - 1
        return e + s
    return s if kind == "k1" else 0.5 * s.square()
