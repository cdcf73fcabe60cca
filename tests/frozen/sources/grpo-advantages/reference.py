"""Hidden reference solution for `grpo-advantages`. Never sent to the jail."""

import torch


def compute_grpo_advantages(scores, group_size, eps=1e-6, scale_by_std=True):
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 2:
        raise ValueError(f"group_size must be an integer of at least 2, got {group_size!r}")
    if eps < 0:
        raise ValueError(f"eps must not be negative, got {eps!r}")
    if scores.dim() != 1:
        raise ValueError(f"scores must be [N], got shape {tuple(scores.shape)}")
    n = scores.shape[0]
    if n % group_size != 0:
        raise ValueError(f"scores has {n} entries, not a multiple of group_size={group_size}")
    dtype = scores.dtype if scores.is_floating_point() else torch.float32
    work = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    grouped = scores.to(work).reshape(-1, group_size)  # consecutive groups
    advantages = grouped - grouped.mean(dim=1, keepdim=True)
    if scale_by_std:
        advantages = advantages / (grouped.std(dim=1, keepdim=True, unbiased=True) + eps)
    # A group of equal scores gets exactly 0: its float mean may be a rounding step off.
    constant = grouped.amax(dim=1, keepdim=True) == grouped.amin(dim=1, keepdim=True)
    advantages = torch.where(constant, torch.zeros_like(advantages), advantages)
    return advantages.reshape(-1).to(dtype)
