"""Hidden reference solution for `whiten`. Never sent to the jail."""

import torch


def masked_whiten(values, mask=None, shift_mean=True, eps=1e-8):
    if mask is not None and mask.shape != values.shape:
        raise ValueError(f"mask has shape {tuple(mask.shape)}, expected {tuple(values.shape)} (the shape of values)")
    dtype = values.dtype
    work = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    v = values.to(work)
    if mask is None:
        valid = torch.ones(v.shape, dtype=torch.bool, device=v.device)
    else:
        valid = mask.to(device=v.device) != 0
    count = int(valid.sum())
    if count < 2:
        raise ValueError(f"mask marks {count} valid value(s); the unbiased variance needs at least 2")
    zero = torch.zeros_like(v)
    mean = torch.where(valid, v, zero).sum() / count
    centered = v - mean
    # Every valid value equal (zero spread): exactly 0, although the float mean of equal values
    # can be a rounding step off them (seven float32 0.1s), and that step times rsqrt(eps) is not 0.
    picked = v[valid]
    if bool(picked.amax() == picked.amin()):
        centered = zero
    var = torch.where(valid, centered * centered, zero).sum() / (count - 1)
    whitened = centered * torch.rsqrt(var + eps)
    if not shift_mean:
        whitened = whitened + mean
    return whitened.to(dtype)
