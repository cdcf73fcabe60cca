"""Hidden reference solution for `gae`. Never sent to the jail."""

import torch


def compute_gae(rewards, values, mask=None, gamma=1.0, lam=0.95):
    if values.shape != rewards.shape:
        raise ValueError(
            f"values has shape {tuple(values.shape)}, expected {tuple(rewards.shape)} (the shape of rewards)"
        )
    if mask is not None and mask.shape != rewards.shape:
        raise ValueError(f"mask has shape {tuple(mask.shape)}, expected {tuple(rewards.shape)} (the shape of rewards)")
    dtype = rewards.dtype
    work = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    with torch.no_grad():
        r = rewards.detach().to(work)
        v = values.detach().to(work)
        if mask is None:
            valid = torch.ones(r.shape, dtype=torch.bool, device=r.device)
        else:
            valid = mask.to(device=r.device) != 0
        r = torch.where(valid, r, torch.zeros_like(r))
        v = torch.where(valid, v, torch.zeros_like(v))
        advantages = torch.zeros_like(r)
        last = torch.zeros_like(r[..., 0])
        next_value = torch.zeros_like(last)  # V_{t+1}: 0 after the last valid token
        for t in reversed(range(r.shape[-1])):
            delta = r[..., t] + gamma * next_value - v[..., t]
            last = torch.where(valid[..., t], delta + gamma * lam * last, torch.zeros_like(last))
            advantages[..., t] = last
            next_value = v[..., t]
        returns = torch.where(valid, advantages + v, torch.zeros_like(v))
    return advantages.to(dtype), returns.to(dtype)
