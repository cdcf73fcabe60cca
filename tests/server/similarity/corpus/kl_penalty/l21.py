import torch


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    if kind.__class__ is not str:
        raise ValueError("kind must be a string")
    name = kind
    if log_probs.shape != ref_log_probs.shape:
        raise ValueError("ref_log_probs.shape=" + str(list(ref_log_probs.shape)) + " log_probs.shape=" + str(list(log_probs.shape)))
    delta = (log_probs - ref_log_probs)
    if name == "k1":
        ans = delta
    elif name == "k2":
        ans = delta.pow(2).mul(0.5)
    elif name == "k3":
        ans = torch.expm1(-delta).add(delta)
    else:
        raise ValueError("kind " + name + " is not one of k1 k2 k3")
    return ans
