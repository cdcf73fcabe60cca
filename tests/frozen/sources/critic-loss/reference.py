"""Hidden reference solution for `critic-loss`. Never sent to the jail."""

import torch


def compute_critic_loss(values, old_values, returns, mask=None, clip_range=None):
    expected = tuple(values.shape)
    for name, t in (("old_values", old_values), ("returns", returns), ("mask", mask)):
        if t is not None and tuple(t.shape) != expected:
            raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {expected} (the shape of values)")
    valid = torch.ones(expected, dtype=torch.bool, device=values.device) if mask is None else mask != 0
    # Gradient flows to `values` only; padding is selected away before anything is squared.
    v = torch.where(valid, values, 0.0)
    old = torch.where(valid, old_values.detach(), 0.0)
    ret = torch.where(valid, returns.detach(), 0.0)
    vf_loss1 = (v - ret) ** 2
    if clip_range is None:
        per_token = vf_loss1
    else:
        v_clipped = old + torch.clamp(v - old, -clip_range, clip_range)
        vf_loss2 = (v_clipped - ret) ** 2
        per_token = torch.max(vf_loss1, vf_loss2)
    counts = valid.to(per_token.dtype)
    per_row = per_token.sum(dim=-1) / counts.sum(dim=-1).clamp(min=1)
    return 0.5 * per_row.mean()
