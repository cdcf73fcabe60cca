import torch


def compute_gae(rewards, values, mask=None, gamma=1.0, lam=0.95):
    """GAE over right-padded sequences: forgets gamma in delta."""
    if values.shape != rewards.shape:
        raise ValueError(f"values has shape {tuple(values.shape)}, expected {tuple(rewards.shape)}")
    if mask is not None and mask.shape != rewards.shape:
        raise ValueError(f"mask has shape {tuple(mask.shape)}, expected {tuple(rewards.shape)}")
    valid = torch.ones_like(rewards, dtype=torch.bool) if mask is None else mask != 0
    v = torch.where(valid, values, torch.zeros_like(values)).detach()
    r = torch.where(valid, rewards, torch.zeros_like(rewards)).detach()
    advantages = torch.zeros_like(r)
    last = torch.zeros_like(r[..., 0])
    next_value = torch.zeros_like(last)
    for t in reversed(range(r.shape[-1])):
        delta = r[..., t] + next_value - v[..., t]
        last = torch.where(valid[..., t], delta + gamma * lam * last, torch.zeros_like(last))
        advantages[..., t] = last
        next_value = v[..., t]
    returns = torch.where(valid, advantages + v, torch.zeros_like(v))
    return advantages, returns
