"""The `rloo-advantages` reference with a switch per known mistake (declared in mutants.py).

`faults=()` is the reference. Self-contained (torch only): a mistake's submitted file is this
module plus a wrapper with the learner's signature.
"""

import torch


def faulty_rloo_advantages(scores, group_size, *, faults=frozenset()):
    if not isinstance(scores, torch.Tensor) or scores.dim() != 1:
        raise ValueError("scores must be a 1-D tensor [N]")
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 2:
        raise ValueError(f"group_size must be an integer of at least 2, got {group_size!r}")
    if scores.numel() % group_size:
        raise ValueError(f"scores has {scores.numel()} elements, not a multiple of group_size={group_size}")
    dtype = scores.dtype
    work = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    attached = "advantages-attached" in faults
    s = scores.to(work) if attached else scores.detach().to(work)
    if "whole-batch-baseline" in faults:
        s = s.reshape(1, -1)  # one "group" of every answer: other prompts' scores leak into the baseline
    else:
        s = s.reshape(-1, group_size)
    k = s.shape[1]
    if "baseline-includes-self" in faults:
        baseline = s.mean(dim=1, keepdim=True)
    else:
        others = s.sum(dim=1, keepdim=True) - s
        baseline = others / (k if "wrong-denominator" in faults else k - 1)
    return (s - baseline).reshape(-1).to(dtype)
