import torch

ALLOWED_KINDS = frozenset({"k1", "k2", "k3"})


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    """Elementwise KL estimators (my own notes)."""
    if kind not in ALLOWED_KINDS:
        raise ValueError(f"compute_kl_penalty: kind {kind!r} not in {sorted(ALLOWED_KINDS)}")
    if log_probs.dim() != ref_log_probs.dim() or log_probs.shape != ref_log_probs.shape:
        raise ValueError("ref_log_probs: shape must equal log_probs's shape exactly")

    # difference between reference and policy
    neg_diff = ref_log_probs - log_probs
    if kind == "k1":
        out = -neg_diff
    elif kind == "k2":
        out = neg_diff * neg_diff / 2.0
    else:
        # expm1 keeps small values exact
        out = torch.expm1(neg_diff) - neg_diff
    return out
