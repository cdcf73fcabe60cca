"""The `whiten` reference with a switch per catalogued mistake (see exercises/mistakes.py).

``faults=()`` is the reference; each switch is one misconception of mutants.py. Self-contained
(torch only): a mutant's submitted file is this module plus a wrapper.
"""

import torch


def faulty_whiten(values, mask=None, shift_mean=True, eps=1e-8, *, faults=frozenset()):
    if "inplace-edit" in faults:  # the values come from a copy; the caller's tensor is edited
        values, edited = values.clone(), values
        edited.data.add_(1)
    if "no-shape-check" not in faults and mask is not None and mask.shape != values.shape:
        raise ValueError(f"mask has shape {tuple(mask.shape)}, expected {tuple(values.shape)}")
    if "fixed-eps" in faults:
        eps = 1e-8
    dtype = values.dtype
    work = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    v = values.to(work)
    if mask is None:
        valid = torch.ones(v.shape, dtype=torch.bool, device=v.device)
    else:
        valid = (mask.to(device=v.device) != 0).expand(v.shape)
    count = int(valid.sum())
    if "no-count-check" not in faults and count < 2:
        raise ValueError(f"mask marks {count} valid value(s); the unbiased variance needs at least 2")
    if "stats-over-padding" in faults:
        valid = torch.ones_like(valid)
        count = valid.numel()
    n = v.numel() if "count-all-elements" in faults else count
    zero = torch.zeros_like(v)
    mean = torch.where(valid, v, zero).sum() / n
    centered = v - mean
    picked = v[valid]
    if "constant-not-detected" not in faults and picked.numel() and bool(picked.amax() == picked.amin()):
        centered = zero  # zero spread: exactly 0 (the float mean of equal values can be a step off)
    dof = n if "biased-variance" in faults else n - 1
    if "one-pass-variance" in faults:
        mean_sq = torch.where(valid, v * v, zero).sum() / n
        var = (mean_sq - mean * mean) * n / dof
    else:
        var = torch.where(valid, centered * centered, zero).sum() / dof
    if "no-eps" in faults:
        whitened = centered / torch.sqrt(var)
    elif "divide-by-variance" in faults:
        whitened = centered / (var + eps)
    elif "eps-outside-sqrt" in faults:
        whitened = centered / (torch.sqrt(var) + eps)
    else:
        whitened = centered * torch.rsqrt(var + eps)
    if not shift_mean and "mean-not-added-back" not in faults:
        whitened = whitened + mean
    return _dtype_fault(whitened.to(dtype), faults)


def _dtype_fault(out, faults):
    """The "wrong-dtype" switch: every result cast to float32, whatever the inputs' dtype."""
    if "wrong-dtype" not in faults:
        return out
    return tuple(t.float() for t in out) if isinstance(out, tuple) else out.float()
