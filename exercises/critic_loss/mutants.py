"""Known-wrong solutions of `critic-loss`, each embodying one misconception.

Each function is self-contained (torch, F and math only) so it can be submitted as a file.
"""

import torch

from exercises.framework import mutant


@mutant("min instead of max in value clipping: the critic loss takes the pessimistic (larger) of the "
        "clipped and unclipped squared errors")
def min_for_max(values, old_values, returns, mask=None, clip_range=None):
    for name, t in (("old_values", old_values), ("returns", returns), ("mask", mask)):
        if t is not None and t.shape != values.shape:
            raise ValueError(name)
    valid = torch.ones_like(values, dtype=torch.bool) if mask is None else mask != 0
    v = torch.where(valid, values, 0.0)
    old = torch.where(valid, old_values.detach(), 0.0)
    ret = torch.where(valid, returns.detach(), 0.0)
    loss = (v - ret) ** 2
    if clip_range is not None:
        v_clipped = old + torch.clamp(v - old, -clip_range, clip_range)
        loss = torch.min(loss, (v_clipped - ret) ** 2)
    n = valid.to(loss.dtype)
    return 0.5 * (loss.sum(-1) / n.sum(-1).clamp(min=1)).mean()


@mutant("clipping around values instead of old_values: v_clipped = old_values + clamp(values - old_values, "
        "-clip_range, clip_range) keeps the NEW value within clip_range of the OLD one")
def clip_around_values(values, old_values, returns, mask=None, clip_range=None):
    for name, t in (("old_values", old_values), ("returns", returns), ("mask", mask)):
        if t is not None and t.shape != values.shape:
            raise ValueError(name)
    valid = torch.ones_like(values, dtype=torch.bool) if mask is None else mask != 0
    v = torch.where(valid, values, 0.0)
    old = torch.where(valid, old_values.detach(), 0.0)
    ret = torch.where(valid, returns.detach(), 0.0)
    loss = (v - ret) ** 2
    if clip_range is not None:
        v_clipped = v + torch.clamp(old - v, -clip_range, clip_range)
        loss = torch.max(loss, (v_clipped - ret) ** 2)
    n = valid.to(loss.dtype)
    return 0.5 * (loss.sum(-1) / n.sum(-1).clamp(min=1)).mean()


@mutant("the 0.5 factor is missing: the value loss is half the mean squared error")
def missing_half(values, old_values, returns, mask=None, clip_range=None):
    for name, t in (("old_values", old_values), ("returns", returns), ("mask", mask)):
        if t is not None and t.shape != values.shape:
            raise ValueError(name)
    valid = torch.ones_like(values, dtype=torch.bool) if mask is None else mask != 0
    v = torch.where(valid, values, 0.0)
    old = torch.where(valid, old_values.detach(), 0.0)
    ret = torch.where(valid, returns.detach(), 0.0)
    loss = (v - ret) ** 2
    if clip_range is not None:
        v_clipped = old + torch.clamp(v - old, -clip_range, clip_range)
        loss = torch.max(loss, (v_clipped - ret) ** 2)
    n = valid.to(loss.dtype)
    return (loss.sum(-1) / n.sum(-1).clamp(min=1)).mean()


@mutant("gradient flows into old_values and returns: they are fixed targets and must be detached")
def grad_to_targets(values, old_values, returns, mask=None, clip_range=None):
    for name, t in (("old_values", old_values), ("returns", returns), ("mask", mask)):
        if t is not None and t.shape != values.shape:
            raise ValueError(name)
    valid = torch.ones_like(values, dtype=torch.bool) if mask is None else mask != 0
    v = torch.where(valid, values, 0.0)
    old = torch.where(valid, old_values, 0.0)
    ret = torch.where(valid, returns, 0.0)
    loss = (v - ret) ** 2
    if clip_range is not None:
        v_clipped = old + torch.clamp(v - old, -clip_range, clip_range)
        loss = torch.max(loss, (v_clipped - ret) ** 2)
    n = valid.to(loss.dtype)
    return 0.5 * (loss.sum(-1) / n.sum(-1).clamp(min=1)).mean()


@mutant("the mask is ignored: padded positions are averaged in as if they were tokens")
def ignores_mask(values, old_values, returns, mask=None, clip_range=None):
    for name, t in (("old_values", old_values), ("returns", returns), ("mask", mask)):
        if t is not None and t.shape != values.shape:
            raise ValueError(name)
    old = old_values.detach()
    ret = returns.detach()
    loss = (values - ret) ** 2
    if clip_range is not None:
        v_clipped = old + torch.clamp(values - old, -clip_range, clip_range)
        loss = torch.max(loss, (v_clipped - ret) ** 2)
    return 0.5 * loss.mean(-1).mean()


@mutant("a row with no valid token gives 0/0 = NaN: clamp each row's token count to at least 1")
def empty_row_nan(values, old_values, returns, mask=None, clip_range=None):
    for name, t in (("old_values", old_values), ("returns", returns), ("mask", mask)):
        if t is not None and t.shape != values.shape:
            raise ValueError(name)
    valid = torch.ones_like(values, dtype=torch.bool) if mask is None else mask != 0
    v = torch.where(valid, values, 0.0)
    old = torch.where(valid, old_values.detach(), 0.0)
    ret = torch.where(valid, returns.detach(), 0.0)
    loss = (v - ret) ** 2
    if clip_range is not None:
        v_clipped = old + torch.clamp(v - old, -clip_range, clip_range)
        loss = torch.max(loss, (v_clipped - ret) ** 2)
    n = valid.to(loss.dtype)
    return 0.5 * (loss.sum(-1) / n.sum(-1)).mean()


@mutant("token-mean instead of the masked mean per row then mean over the batch: pooling all valid "
        "tokens weighs long responses more")
def token_mean(values, old_values, returns, mask=None, clip_range=None):
    for name, t in (("old_values", old_values), ("returns", returns), ("mask", mask)):
        if t is not None and t.shape != values.shape:
            raise ValueError(name)
    valid = torch.ones_like(values, dtype=torch.bool) if mask is None else mask != 0
    v = torch.where(valid, values, 0.0)
    old = torch.where(valid, old_values.detach(), 0.0)
    ret = torch.where(valid, returns.detach(), 0.0)
    loss = (v - ret) ** 2
    if clip_range is not None:
        v_clipped = old + torch.clamp(v - old, -clip_range, clip_range)
        loss = torch.max(loss, (v_clipped - ret) ** 2)
    return 0.5 * loss.sum() / valid.sum().clamp(min=1)


@mutant("`if clip_range:` treats clip_range=0.0 as no clipping: test `clip_range is not None`")
def truthy_clip(values, old_values, returns, mask=None, clip_range=None):
    for name, t in (("old_values", old_values), ("returns", returns), ("mask", mask)):
        if t is not None and t.shape != values.shape:
            raise ValueError(name)
    valid = torch.ones_like(values, dtype=torch.bool) if mask is None else mask != 0
    v = torch.where(valid, values, 0.0)
    old = torch.where(valid, old_values.detach(), 0.0)
    ret = torch.where(valid, returns.detach(), 0.0)
    loss = (v - ret) ** 2
    if clip_range:
        v_clipped = old + torch.clamp(v - old, -clip_range, clip_range)
        loss = torch.max(loss, (v_clipped - ret) ** 2)
    n = valid.to(loss.dtype)
    return 0.5 * (loss.sum(-1) / n.sum(-1).clamp(min=1)).mean()


@mutant("padding masked by multiplying after squaring: a large value at a padded position overflows to inf, "
        "and inf * 0 = NaN (select with torch.where before squaring instead)")
def multiply_by_mask(values, old_values, returns, mask=None, clip_range=None):
    for name, t in (("old_values", old_values), ("returns", returns), ("mask", mask)):
        if t is not None and t.shape != values.shape:
            raise ValueError(name)
    m = torch.ones_like(values) if mask is None else mask.to(values.dtype)
    old = old_values.detach()
    ret = returns.detach()
    loss = (values - ret) ** 2
    if clip_range is not None:
        v_clipped = old + torch.clamp(values - old, -clip_range, clip_range)
        loss = torch.max(loss, (v_clipped - ret) ** 2)
    return 0.5 * ((loss * m).sum(-1) / m.sum(-1).clamp(min=1)).mean()
