"""Hidden reference solution for `rloo-advantages`. Never sent to a learner."""

import torch


def compute_rloo_advantages(scores, group_size):
    if not isinstance(scores, torch.Tensor) or scores.dim() != 1:
        raise ValueError("scores must be a 1-D tensor [N]")
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 2:
        raise ValueError(f"group_size must be an integer of at least 2, got {group_size!r}")
    if scores.numel() % group_size:
        raise ValueError(f"scores has {scores.numel()} elements, not a multiple of group_size={group_size}")
    dtype = scores.dtype
    work = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    with torch.no_grad():
        s = scores.detach().to(work).reshape(-1, group_size)
        others = s.sum(dim=1, keepdim=True) - s
        advantages = s - others / (group_size - 1)
    return advantages.reshape(-1).to(dtype)
