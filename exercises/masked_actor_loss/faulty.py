"""The `masked-actor-loss` reference with a switch per catalogued mistake (see exercises/mistakes.py).

``faults=()`` is the reference; each switch is one misconception of mutants.py. Self-contained
(torch only): a mutant's submitted file is this module plus a wrapper.
"""

import torch


def faulty_masked_actor_loss(
    log_probs_new,
    log_probs_old,
    advantages,
    action_mask=None,
    clip_range=0.2,
    loss_agg_mode="seq-mean-token-mean",
    *,
    faults=frozenset(),
):
    modes = ("seq-mean-token-mean", "token-mean")
    if "no-mode-validation" not in faults and loss_agg_mode not in modes:
        raise ValueError(f"loss_agg_mode must be one of {modes}, got {loss_agg_mode!r}")
    expected = tuple(log_probs_new.shape)
    if "no-shape-check" not in faults:
        for name, t in (("log_probs_old", log_probs_old), ("advantages", advantages), ("action_mask", action_mask)):
            if t is not None and tuple(t.shape) != expected:
                raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {expected}")
    if action_mask is None:
        valid = torch.ones(expected, dtype=torch.bool, device=log_probs_new.device)
    else:
        valid = (action_mask != 0).expand(expected) if "no-shape-check" in faults else action_mask != 0
    if "ignores-mask" in faults:
        valid = torch.ones_like(valid)
    low, high = (0.8, 1.2) if "fixed-clip" in faults else (1.0 - clip_range, 1.0 + clip_range)
    diff = log_probs_old - log_probs_new if "inverted-ratio" in faults else log_probs_new - log_probs_old
    if "multiply-by-mask" in faults:
        mask = valid.to(log_probs_new.dtype)
        ratio, adv = torch.exp(diff), advantages
    else:
        mask = None
        ratio = torch.exp(torch.where(valid, diff, 0.0))
        adv = torch.where(valid, advantages, 0.0)
    # "detached-clipped-branch" / "detached-unclipped-branch": one term of the min built from a
    # detached ratio (the values are the same, the gradient is not)
    inner = ratio.detach() if "detached-clipped-branch" in faults else ratio
    clipped = ratio if "no-clip" in faults else torch.clamp(inner, low, high)
    unclipped = ratio.detach() if "detached-unclipped-branch" in faults else ratio
    pick = torch.max if "max-for-min" in faults else torch.min
    per_token = pick(unclipped * adv, clipped * adv)
    if "missing-minus" not in faults:
        per_token = -per_token
    if mask is not None:
        per_token = per_token * mask
    counts = valid.to(per_token.dtype)
    token_mean = (loss_agg_mode == "token-mean") != ("swapped-modes" in faults)
    if token_mean:
        total = counts.sum()
        if "token-mean-over-all-positions" in faults:
            total = torch.tensor(float(per_token.numel()), dtype=per_token.dtype)
        elif "empty-row-nan" not in faults and "empty-batch-nan" not in faults:
            total = total.clamp(min=1)
        return _dtype_fault(per_token.sum() / total, faults)
    row_counts = counts.sum(dim=-1)
    if "divide-by-length" in faults:
        row_counts = torch.full_like(row_counts, per_token.shape[-1])
    elif "empty-row-nan" not in faults:
        row_counts = row_counts.clamp(min=1)
    per_row = per_token.sum(dim=-1) / row_counts
    if "empty-rows-excluded" in faults:
        return _dtype_fault(per_row.sum() / (counts.sum(dim=-1) > 0).sum().clamp(min=1), faults)
    return _dtype_fault(per_row.mean(), faults)


def _dtype_fault(out, faults):
    """The "wrong-dtype" switch: every result cast to float32, whatever the inputs' dtype."""
    if "wrong-dtype" not in faults:
        return out
    return tuple(t.float() for t in out) if isinstance(out, tuple) else out.float()
