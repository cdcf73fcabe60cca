import torch


def _k1(delta):
    return delta


def _k2(delta):
    return (delta ** 2) * 0.5


def _k3(delta):
    # delta = log p - log q ; k3 = e^{-delta} - 1 + delta
    return delta + torch.special.expm1(-delta)


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    table = {"k1": _k1, "k2": _k2, "k3": _k3}
    if kind not in table:
        raise ValueError(f"kind should be k1/k2/k3, not {kind!r}")
    if log_probs.shape == ref_log_probs.shape:
        return table[kind](log_probs - ref_log_probs)
    raise ValueError(f"ref_log_probs {tuple(ref_log_probs.shape)} != log_probs {tuple(log_probs.shape)}")
