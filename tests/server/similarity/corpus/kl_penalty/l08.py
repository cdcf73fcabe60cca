import torch


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    if kind in ("k1", "k2", "k3"):
        pass
    else:
        raise ValueError("unsupported kind")
    if not log_probs.shape == ref_log_probs.shape:
        raise ValueError("log_probs and ref_log_probs must share a shape")
    out = None
    lr = log_probs.sub(ref_log_probs)
    if kind == "k1":
        out = lr.clone()
    if kind == "k2":
        out = lr.mul(lr).mul(0.5)
    if kind == "k3":
        out = lr.neg().expm1().add(lr)
    return out
