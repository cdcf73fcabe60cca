import torch


def compute_kl_penalty(log_probs: torch.Tensor, ref_log_probs: torch.Tensor, kind: str = "k1") -> torch.Tensor:
    if ref_log_probs.shape != log_probs.shape:
        msg = "ref_log_probs has shape " + str(tuple(ref_log_probs.shape))
        msg += " but log_probs has shape " + str(tuple(log_probs.shape))
        raise ValueError(msg)
    index = {"k1": 1, "k2": 2, "k3": 3}.get(kind)
    if index is None:
        raise ValueError("kind must be one of k1, k2, k3")
    t = log_probs - ref_log_probs
    results = [None, t, t.square().mul(0.5), None]
    if index == 3:
        results[3] = torch.expm1(-t) + t
    return results[index]
