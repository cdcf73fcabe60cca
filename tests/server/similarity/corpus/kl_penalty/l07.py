import torch

SUPPORTED = frozenset({"k1", "k2", "k3"})


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    """KL(pi || pi_ref) estimators from Schulman's note on approximating KL."""
    if kind not in SUPPORTED:
        raise ValueError(f"compute_kl_penalty: kind {kind!r} not in {sorted(SUPPORTED)}")
    if log_probs.dim() != ref_log_probs.dim() or log_probs.shape != ref_log_probs.shape:
        raise ValueError("ref_log_probs: shape must equal log_probs's shape exactly")

    logr = ref_log_probs - log_probs          # log of q/p
    if kind == "k1":
        result = -logr
    elif kind == "k2":
        result = logr * logr / 2.0
    else:
        result = torch.expm1(logr) - logr     # (r - 1) - log r, stable
    return result
