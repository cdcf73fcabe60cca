import torch


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    if type(kind) is not str or len(kind) != 2 or kind[0] != "k" or kind[1] not in "123":
        raise ValueError("kind must be 'k1', 'k2' or 'k3'")
    if log_probs.shape != ref_log_probs.shape:
        raise ValueError("ref_log_probs: wrong shape")
    order = int(kind[1])
    d = log_probs - ref_log_probs
    if order == 1:
        return d
    if order == 2:
        return torch.pow(d, 2) * 0.5
    return torch.expm1(torch.negative(d)) + d
