import torch
from torch import Tensor


def kl_k1(lp: Tensor, rp: Tensor) -> Tensor:
    return lp - rp


def kl_k2(lp: Tensor, rp: Tensor) -> Tensor:
    return 0.5 * (lp - rp) ** 2


def kl_k3(lp: Tensor, rp: Tensor) -> Tensor:
    z = rp - lp
    return torch.expm1(z) - z


def compute_kl_penalty(log_probs: Tensor, ref_log_probs: Tensor, kind: str = "k1") -> Tensor:
    funcs = dict(k1=kl_k1, k2=kl_k2, k3=kl_k3)
    fn = funcs.get(kind) if isinstance(kind, str) else None
    if fn is None:
        raise ValueError("kind must be k1, k2 or k3")
    if log_probs.shape != ref_log_probs.shape:
        raise ValueError("ref_log_probs must be shaped like log_probs")
    return fn(log_probs, ref_log_probs)
