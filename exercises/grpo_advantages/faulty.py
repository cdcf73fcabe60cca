"""The `grpo-advantages` reference with a switch per catalogued mistake (see exercises/mistakes.py).

``faults=()`` is the reference; each switch is one misconception of mutants.py. Self-contained
(torch only): a mutant's submitted file is this module plus a wrapper.
"""

import torch


def faulty_grpo_advantages(scores, group_size, eps=1e-6, scale_by_std=True, *, faults=frozenset()):
    if "modulo-before-group-size-check" in faults and scores.shape[0] % group_size != 0:  # 0: ZeroDivisionError
        raise ValueError(f"scores has {scores.shape[0]} entries, not a multiple of group_size={group_size}")
    if "inplace-edit" in faults:  # the values come from a copy; the caller's tensor is edited
        scores, edited = scores.clone(), scores
        edited.data.add_(1)
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 2:
        raise ValueError(f"group_size must be an integer of at least 2, got {group_size!r}")
    if eps < 0:
        raise ValueError(f"eps must not be negative, got {eps!r}")
    if scores.dim() != 1 and "no-dim-check" not in faults:  # the fault: [G, group_size] scores accepted
        raise ValueError(f"scores must be [N], got shape {tuple(scores.shape)}")
    n = scores.shape[0]
    if "no-value-error" not in faults and n % group_size != 0:
        raise ValueError(f"scores has {n} entries, not a multiple of group_size={group_size}")
    dtype = scores.dtype if scores.is_floating_point() else torch.float32
    work = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    if "whole-batch" in faults:
        grouped = scores.to(work).reshape(1, -1)
    elif "strided-groups" in faults:
        grouped = scores.to(work).reshape(group_size, -1).t()
    else:
        grouped = scores.to(work).reshape(-1, group_size)
    advantages = grouped - grouped.mean(dim=1, keepdim=True)
    if scale_by_std or "scale-flag-ignored" in faults:
        if "eps-inside-sqrt" in faults:
            scale = torch.sqrt(grouped.var(dim=1, keepdim=True) + eps)
        else:
            std = grouped.std(dim=1, keepdim=True, unbiased="biased-std" not in faults)
            scale = std if "no-eps" in faults else std + eps
        advantages = advantages / scale
    if "constant-group-not-detected" not in faults:
        constant = grouped.amax(dim=1, keepdim=True) == grouped.amin(dim=1, keepdim=True)
        advantages = torch.where(constant, torch.zeros_like(advantages), advantages)
    if "strided-groups" in faults:
        advantages = advantages.t()
    if "not-flattened" in faults:
        return _dtype_fault(advantages.to(dtype), faults)
    return _dtype_fault(advantages.reshape(-1).to(dtype), faults)


def _dtype_fault(out, faults):
    """The "wrong-dtype" switch: every result cast to float32, whatever the inputs' dtype."""
    if "wrong-dtype" not in faults:
        return out
    return tuple(t.float() for t in out) if isinstance(out, tuple) else out.float()
