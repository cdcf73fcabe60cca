import torch


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    if ref_log_probs.shape != log_probs.shape:
        raise ValueError(
            "compute_kl_penalty expects ref_log_probs with shape "
            f"{tuple(log_probs.shape)}, but it has {tuple(ref_log_probs.shape)}"
        )
    if kind == "k1":
        result = torch.sub(log_probs, ref_log_probs)
    elif kind == "k2":
        gap = torch.sub(log_probs, ref_log_probs)
        result = torch.square(gap).mul(0.5)
    elif kind == "k3":
        gap = torch.sub(ref_log_probs, log_probs)
        result = torch.sub(torch.special.expm1(gap), gap)
    else:
        raise ValueError(f"kind={kind!r} unknown")
    return result
