import torch


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    ok = {"k1": True, "k2": True, "k3": True}
    if not ok.get(kind, False):
        raise ValueError("choose kind from k1, k2, k3")
    if log_probs.shape != ref_log_probs.shape:
        raise ValueError(f"ref_log_probs: {ref_log_probs.shape} vs {log_probs.shape}")
    r = ref_log_probs - log_probs
    if kind == "k3":
        return r.expm1() - r
    k1 = -r
    if kind == "k2":
        return k1 * k1 / 2
    return k1
