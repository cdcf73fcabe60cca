"""The `critic-loss` reference with a switch per catalogued mistake (see exercises/mistakes.py).

``faults=()`` is the reference; each switch is one misconception of mutants.py. Self-contained
(torch only): a mutant's submitted file is this module plus a wrapper.
"""

import torch


def faulty_critic_loss(values, old_values, returns, mask=None, clip_range=None, *, faults=frozenset()):
    if "inplace-edit" in faults:  # the values come from a copy; the caller's tensor is edited
        returns, edited = returns.clone(), returns
        edited.data.add_(1)
    expected = tuple(values.shape)
    if "no-shape-check" not in faults:
        for name, t in (("old_values", old_values), ("returns", returns), ("mask", mask)):
            if t is not None and tuple(t.shape) != expected:
                raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {expected}")
    if mask is None:
        valid = torch.ones(expected, dtype=torch.bool, device=values.device)
    else:
        valid = (mask != 0).expand(expected) if "no-shape-check" in faults else mask != 0
    if "ignores-mask" in faults:
        valid = torch.ones_like(valid)
    old_t = old_values if "grad-to-targets" in faults else old_values.detach()
    ret_t = returns if "grad-to-targets" in faults else returns.detach()
    if "multiply-by-mask" in faults:
        v, old, ret = values, old_t, ret_t
    else:
        v = torch.where(valid, values, 0.0)
        old = torch.where(valid, old_t, 0.0)
        ret = torch.where(valid, ret_t, 0.0)
    vf_loss1 = (v - ret) ** 2
    # "detached-clipped-branch": the clamped difference sees detached values
    v_in = v.detach() if faults & {"detached-clipped-branch", "detached-clipped-branch-bounds"} else v
    # the "-bounds" forms clip as clamp(values, old - c, old + c): values exactly inside the range
    bounds = bool(faults & {"detached-clipped-branch-bounds", "detached-unclipped-branch-bounds"})
    clipping = bool(clip_range) if "truthy-clip" in faults else clip_range is not None
    if not clipping:
        per_token = vf_loss1
    else:
        c = 0.2 if "fixed-clip" in faults else clip_range
        if "clip-around-values" in faults:
            v_clipped = v_in + torch.clamp(old - v_in, -c, c)
        elif "clip-around-returns" in faults:
            v_clipped = ret + torch.clamp(v_in - ret, -c, c)
        elif bounds:
            v_clipped = torch.clamp(v_in, old - c, old + c)
        else:
            v_clipped = old + torch.clamp(v_in - old, -c, c)
        vf_loss2 = (v_clipped - ret) ** 2
        # "detached-unclipped-branch": the max's unclipped error is built from detached values
        detached = faults & {"detached-unclipped-branch", "detached-unclipped-branch-bounds"}
        unclipped = (v.detach() - ret) ** 2 if detached else vf_loss1
        per_token = torch.min(unclipped, vf_loss2) if "min-for-max" in faults else torch.max(unclipped, vf_loss2)
    counts = valid.to(per_token.dtype)
    if "multiply-by-mask" in faults:
        per_token = per_token * counts
    half = 1.0 if "missing-half" in faults else 0.5
    if "token-mean" in faults:
        return _dtype_fault(half * per_token.sum() / counts.sum().clamp(min=1), faults)
    row_counts = counts.sum(dim=-1) if "empty-row-nan" in faults else counts.sum(dim=-1).clamp(min=1)
    per_row = per_token.sum(dim=-1) / row_counts
    return _dtype_fault(half * per_row.mean(), faults)


def _dtype_fault(out, faults):
    """The "wrong-dtype" switch: every result cast to float32, whatever the inputs' dtype."""
    if "wrong-dtype" not in faults:
        return out
    return tuple(t.float() for t in out) if isinstance(out, tuple) else out.float()
