import torch


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    problems = []
    if kind not in {"k1", "k2", "k3"}:
        problems.append(f"kind={kind!r} (use k1, k2, k3)")
    if log_probs.shape != ref_log_probs.shape:
        problems.append(f"ref_log_probs shape {tuple(ref_log_probs.shape)} != {tuple(log_probs.shape)}")
    if problems:
        raise ValueError("; ".join(problems))
    lr = log_probs - ref_log_probs
    k = int(kind[-1])
    if k == 1:
        value = lr
    elif k == 2:
        value = lr.square() * 0.5
    else:
        value = lr + torch.expm1(-lr)
    return value
