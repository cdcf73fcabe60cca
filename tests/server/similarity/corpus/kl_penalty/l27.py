import torch


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    """k1, k2, k3 of http://joschu.net/blog/kl-approx.html"""
    if (kind != "k1") and (kind != "k2") and (kind != "k3"):
        raise ValueError("bad kind " + repr(kind))
    if tuple(ref_log_probs.size()) != tuple(log_probs.size()):
        raise ValueError("ref_log_probs must match log_probs in shape")
    logratio = log_probs - ref_log_probs
    if kind == "k1":
        return logratio
    if kind == "k2":
        return logratio.mul(logratio) * 0.5
    neg = logratio.neg()
    return neg.expm1() - neg
