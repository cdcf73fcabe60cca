import torch


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    shapes = {tuple(log_probs.shape), tuple(ref_log_probs.shape)}
    if len(shapes) > 1:
        raise ValueError(f"ref_log_probs and log_probs have different shapes: {sorted(shapes)}")
    choices = ["k1", "k2", "k3"]
    if choices.count(kind) == 0:
        raise ValueError(f"kind must be in {choices}")
    a = log_probs
    b = ref_log_probs
    if kind == choices[0]:
        return a - b
    if kind == choices[1]:
        return torch.mul(a - b, a - b) * 0.5
    w = b - a
    return torch.expm1(w) - w
