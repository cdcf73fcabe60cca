import torch


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    if log_probs.shape != ref_log_probs.shape:
        raise ValueError("ref_log_probs and log_probs: shapes differ")
    kind_ok = kind == "k1" or kind == "k2" or kind == "k3"
    if not kind_ok:
        raise ValueError("kind?")
    x = log_probs - ref_log_probs
    y = -x
    return {"k1": x, "k2": x * x * 0.5, "k3": y.expm1() - y}[kind] if kind != "k3" else y.expm1() - y
