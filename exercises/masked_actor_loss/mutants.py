"""Known-wrong solutions of `masked-actor-loss`, each embodying one misconception.

Each function is self-contained (torch, F and math only) so it can be submitted as a file.
"""

import torch

from exercises.framework import mutant


@mutant("seq-mean-token-mean and token-mean swapped: seq-mean-token-mean averages each row first, "
        "then the rows; token-mean pools every valid token of the batch")
def swapped_modes(log_probs_new, log_probs_old, advantages, action_mask=None, clip_range=0.2,
                  loss_agg_mode="seq-mean-token-mean"):
    if loss_agg_mode not in ("seq-mean-token-mean", "token-mean"):
        raise ValueError(f"loss_agg_mode {loss_agg_mode!r}")
    for name, t in (("log_probs_old", log_probs_old), ("advantages", advantages), ("action_mask", action_mask)):
        if t is not None and t.shape != log_probs_new.shape:
            raise ValueError(name)
    valid = torch.ones_like(log_probs_new, dtype=torch.bool) if action_mask is None else action_mask != 0
    ratio = torch.exp(torch.where(valid, log_probs_new - log_probs_old, 0.0))
    adv = torch.where(valid, advantages, 0.0)
    loss = -torch.min(ratio * adv, torch.clamp(ratio, 1 - clip_range, 1 + clip_range) * adv)
    n = valid.to(loss.dtype)
    if loss_agg_mode == "seq-mean-token-mean":
        return loss.sum() / n.sum().clamp(min=1)
    return (loss.sum(-1) / n.sum(-1).clamp(min=1)).mean()


@mutant("the mask is ignored: padded positions are averaged in as if they were tokens")
def ignores_mask(log_probs_new, log_probs_old, advantages, action_mask=None, clip_range=0.2,
                 loss_agg_mode="seq-mean-token-mean"):
    if loss_agg_mode not in ("seq-mean-token-mean", "token-mean"):
        raise ValueError(f"loss_agg_mode {loss_agg_mode!r}")
    for name, t in (("log_probs_old", log_probs_old), ("advantages", advantages), ("action_mask", action_mask)):
        if t is not None and t.shape != log_probs_new.shape:
            raise ValueError(name)
    ratio = torch.exp(log_probs_new - log_probs_old)
    loss = -torch.min(ratio * advantages, torch.clamp(ratio, 1 - clip_range, 1 + clip_range) * advantages)
    if loss_agg_mode == "token-mean":
        return loss.mean()
    return loss.mean(-1).mean()


@mutant("a row with no valid token gives 0/0 = NaN: clamp each row's token count to at least 1")
def empty_row_nan(log_probs_new, log_probs_old, advantages, action_mask=None, clip_range=0.2,
                  loss_agg_mode="seq-mean-token-mean"):
    if loss_agg_mode not in ("seq-mean-token-mean", "token-mean"):
        raise ValueError(f"loss_agg_mode {loss_agg_mode!r}")
    for name, t in (("log_probs_old", log_probs_old), ("advantages", advantages), ("action_mask", action_mask)):
        if t is not None and t.shape != log_probs_new.shape:
            raise ValueError(name)
    valid = torch.ones_like(log_probs_new, dtype=torch.bool) if action_mask is None else action_mask != 0
    ratio = torch.exp(torch.where(valid, log_probs_new - log_probs_old, 0.0))
    adv = torch.where(valid, advantages, 0.0)
    loss = -torch.min(ratio * adv, torch.clamp(ratio, 1 - clip_range, 1 + clip_range) * adv)
    n = valid.to(loss.dtype)
    if loss_agg_mode == "token-mean":
        return loss.sum() / n.sum()
    return (loss.sum(-1) / n.sum(-1)).mean()


@mutant("rows with no valid token dropped from the batch mean: they contribute 0 but still count in B")
def empty_rows_excluded(log_probs_new, log_probs_old, advantages, action_mask=None, clip_range=0.2,
                        loss_agg_mode="seq-mean-token-mean"):
    if loss_agg_mode not in ("seq-mean-token-mean", "token-mean"):
        raise ValueError(f"loss_agg_mode {loss_agg_mode!r}")
    for name, t in (("log_probs_old", log_probs_old), ("advantages", advantages), ("action_mask", action_mask)):
        if t is not None and t.shape != log_probs_new.shape:
            raise ValueError(name)
    valid = torch.ones_like(log_probs_new, dtype=torch.bool) if action_mask is None else action_mask != 0
    ratio = torch.exp(torch.where(valid, log_probs_new - log_probs_old, 0.0))
    adv = torch.where(valid, advantages, 0.0)
    loss = -torch.min(ratio * adv, torch.clamp(ratio, 1 - clip_range, 1 + clip_range) * adv)
    n = valid.to(loss.dtype)
    if loss_agg_mode == "token-mean":
        return loss.sum() / n.sum().clamp(min=1)
    rows = n.sum(-1) > 0
    return (loss.sum(-1) / n.sum(-1).clamp(min=1)).sum() / rows.sum().clamp(min=1)


@mutant("each row divided by T (the padded length) instead of its own number of valid tokens")
def divide_by_length(log_probs_new, log_probs_old, advantages, action_mask=None, clip_range=0.2,
                     loss_agg_mode="seq-mean-token-mean"):
    if loss_agg_mode not in ("seq-mean-token-mean", "token-mean"):
        raise ValueError(f"loss_agg_mode {loss_agg_mode!r}")
    for name, t in (("log_probs_old", log_probs_old), ("advantages", advantages), ("action_mask", action_mask)):
        if t is not None and t.shape != log_probs_new.shape:
            raise ValueError(name)
    valid = torch.ones_like(log_probs_new, dtype=torch.bool) if action_mask is None else action_mask != 0
    ratio = torch.exp(torch.where(valid, log_probs_new - log_probs_old, 0.0))
    adv = torch.where(valid, advantages, 0.0)
    loss = -torch.min(ratio * adv, torch.clamp(ratio, 1 - clip_range, 1 + clip_range) * adv)
    if loss_agg_mode == "token-mean":
        return loss.sum() / valid.sum().clamp(min=1)
    return (loss.sum(-1) / loss.shape[-1]).mean()


@mutant("token-mean divided by every position B * T, padding included, instead of the number of valid tokens")
def token_mean_over_all_positions(log_probs_new, log_probs_old, advantages, action_mask=None, clip_range=0.2,
                                  loss_agg_mode="seq-mean-token-mean"):
    if loss_agg_mode not in ("seq-mean-token-mean", "token-mean"):
        raise ValueError(f"loss_agg_mode {loss_agg_mode!r}")
    for name, t in (("log_probs_old", log_probs_old), ("advantages", advantages), ("action_mask", action_mask)):
        if t is not None and t.shape != log_probs_new.shape:
            raise ValueError(name)
    valid = torch.ones_like(log_probs_new, dtype=torch.bool) if action_mask is None else action_mask != 0
    ratio = torch.exp(torch.where(valid, log_probs_new - log_probs_old, 0.0))
    adv = torch.where(valid, advantages, 0.0)
    loss = -torch.min(ratio * adv, torch.clamp(ratio, 1 - clip_range, 1 + clip_range) * adv)
    n = valid.to(loss.dtype)
    if loss_agg_mode == "token-mean":
        return loss.sum() / loss.numel()
    return (loss.sum(-1) / n.sum(-1).clamp(min=1)).mean()


@mutant("an unknown loss_agg_mode silently falls back to a default instead of raising ValueError")
def no_mode_validation(log_probs_new, log_probs_old, advantages, action_mask=None, clip_range=0.2,
                       loss_agg_mode="seq-mean-token-mean"):
    for name, t in (("log_probs_old", log_probs_old), ("advantages", advantages), ("action_mask", action_mask)):
        if t is not None and t.shape != log_probs_new.shape:
            raise ValueError(name)
    valid = torch.ones_like(log_probs_new, dtype=torch.bool) if action_mask is None else action_mask != 0
    ratio = torch.exp(torch.where(valid, log_probs_new - log_probs_old, 0.0))
    adv = torch.where(valid, advantages, 0.0)
    loss = -torch.min(ratio * adv, torch.clamp(ratio, 1 - clip_range, 1 + clip_range) * adv)
    n = valid.to(loss.dtype)
    if loss_agg_mode == "token-mean":
        return loss.sum() / n.sum().clamp(min=1)
    return (loss.sum(-1) / n.sum(-1).clamp(min=1)).mean()


@mutant("padding masked by multiplying after exp: a large value at a padded position overflows to inf, "
        "and inf * 0 = NaN (select with torch.where before exp instead)")
def multiply_by_mask(log_probs_new, log_probs_old, advantages, action_mask=None, clip_range=0.2,
                     loss_agg_mode="seq-mean-token-mean"):
    if loss_agg_mode not in ("seq-mean-token-mean", "token-mean"):
        raise ValueError(f"loss_agg_mode {loss_agg_mode!r}")
    for name, t in (("log_probs_old", log_probs_old), ("advantages", advantages), ("action_mask", action_mask)):
        if t is not None and t.shape != log_probs_new.shape:
            raise ValueError(name)
    mask = torch.ones_like(log_probs_new) if action_mask is None else action_mask.to(log_probs_new.dtype)
    ratio = torch.exp(log_probs_new - log_probs_old)
    loss = -torch.min(ratio * advantages, torch.clamp(ratio, 1 - clip_range, 1 + clip_range) * advantages)
    loss = loss * mask
    if loss_agg_mode == "token-mean":
        return loss.sum() / mask.sum().clamp(min=1)
    return (loss.sum(-1) / mask.sum(-1).clamp(min=1)).mean()


@mutant("no shape check: a [B, 1] advantage (or mask) silently broadcasts against [B, T] log-probs")
def no_shape_check(log_probs_new, log_probs_old, advantages, action_mask=None, clip_range=0.2,
                   loss_agg_mode="seq-mean-token-mean"):
    if loss_agg_mode not in ("seq-mean-token-mean", "token-mean"):
        raise ValueError(f"loss_agg_mode {loss_agg_mode!r}")
    valid = torch.ones_like(log_probs_new, dtype=torch.bool) if action_mask is None else action_mask != 0
    valid = valid.expand_as(log_probs_new)
    ratio = torch.exp(torch.where(valid, log_probs_new - log_probs_old, 0.0))
    adv = torch.where(valid, advantages, 0.0)
    loss = -torch.min(ratio * adv, torch.clamp(ratio, 1 - clip_range, 1 + clip_range) * adv)
    n = valid.to(loss.dtype)
    if loss_agg_mode == "token-mean":
        return loss.sum() / n.sum().clamp(min=1)
    return (loss.sum(-1) / n.sum(-1).clamp(min=1)).mean()
