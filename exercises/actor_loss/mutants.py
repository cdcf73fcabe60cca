"""Known-wrong solutions of `actor-loss`, each embodying one misconception.

Each function is self-contained (torch, F and math only) so it can be submitted as a file.
"""

import torch

from exercises.framework import mutant


@mutant("max instead of min: PPO takes the pessimistic (smaller) of the clipped and unclipped objectives")
def max_for_min(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    ratio = torch.exp(log_probs_new - log_probs_old)
    clipped = torch.clamp(ratio, 1 - clip_range, 1 + clip_range)
    return -torch.max(ratio * advantages, clipped * advantages).mean()


@mutant("missing minus sign: the loss is the negated objective, since optimisers minimise")
def missing_minus(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    ratio = torch.exp(log_probs_new - log_probs_old)
    clipped = torch.clamp(ratio, 1 - clip_range, 1 + clip_range)
    return torch.min(ratio * advantages, clipped * advantages).mean()


@mutant("clipping the advantage instead of the probability ratio")
def clip_advantage(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    ratio = torch.exp(log_probs_new - log_probs_old)
    clipped_adv = torch.clamp(advantages, 1 - clip_range, 1 + clip_range)
    return -torch.min(ratio * advantages, ratio * clipped_adv).mean()


@mutant("clip_range hard-coded to 0.2 instead of using the argument")
def fixed_clip(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    ratio = torch.exp(log_probs_new - log_probs_old)
    clipped = torch.clamp(ratio, 0.8, 1.2)
    return -torch.min(ratio * advantages, clipped * advantages).mean()


@mutant("sum instead of mean over the elements")
def sum_not_mean(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    ratio = torch.exp(log_probs_new - log_probs_old)
    clipped = torch.clamp(ratio, 1 - clip_range, 1 + clip_range)
    return -torch.min(ratio * advantages, clipped * advantages).sum()


@mutant("detached ratio: computing the ratio without gradient, so the policy never learns")
def detached_ratio(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    ratio = torch.exp(log_probs_new.detach() - log_probs_old)
    clipped = torch.clamp(ratio, 1 - clip_range, 1 + clip_range)
    return -torch.min(ratio * advantages, clipped * advantages).mean()


@mutant("no shape check: a [B] advantage silently broadcasts against [B, T] log-probs")
def no_shape_check(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    ratio = torch.exp(log_probs_new - log_probs_old)
    clipped = torch.clamp(ratio, 1 - clip_range, 1 + clip_range)
    return -torch.min(ratio * advantages, clipped * advantages).mean()


@mutant("in-place edit of an input: advantages scaled in place, changing the caller's tensor")
def inplace_edit(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    if log_probs_old.shape != log_probs_new.shape or advantages.shape != log_probs_new.shape:
        raise ValueError("shapes differ")
    ratio = torch.exp(log_probs_new - log_probs_old)
    clipped = torch.clamp(ratio, 1 - clip_range, 1 + clip_range)
    adv = advantages.mul_(1.0)
    adv += 0.0
    log_probs_old.sub_(0.5)
    return -torch.min(ratio * adv, clipped * adv).mean()


@mutant("ratio without exp: log-probs are subtracted but never exponentiated")
def ratio_without_exp(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    if log_probs_old.shape != log_probs_new.shape or advantages.shape != log_probs_new.shape:
        raise ValueError("shapes differ")
    ratio = log_probs_new - log_probs_old
    clipped = torch.clamp(ratio, 1 - clip_range, 1 + clip_range)
    return -torch.min(ratio * advantages, clipped * advantages).mean()


@mutant("inverted ratio: exp(old - new) instead of exp(new - old)")
def inverted_ratio(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    if log_probs_old.shape != log_probs_new.shape or advantages.shape != log_probs_new.shape:
        raise ValueError("shapes differ")
    ratio = torch.exp(log_probs_old - log_probs_new)
    clipped = torch.clamp(ratio, 1 - clip_range, 1 + clip_range)
    return -torch.min(ratio * advantages, clipped * advantages).mean()


@mutant("one-sided clip: only the upper bound 1 + clip_range is applied")
def one_sided_clip(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    if log_probs_old.shape != log_probs_new.shape or advantages.shape != log_probs_new.shape:
        raise ValueError("shapes differ")
    ratio = torch.exp(log_probs_new - log_probs_old)
    clipped = torch.clamp(ratio, max=1 + clip_range)
    return -torch.min(ratio * advantages, clipped * advantages).mean()


@mutant("result not reduced to a scalar: the per-element loss is returned")
def no_reduction(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    if log_probs_old.shape != log_probs_new.shape or advantages.shape != log_probs_new.shape:
        raise ValueError("shapes differ")
    ratio = torch.exp(log_probs_new - log_probs_old)
    clipped = torch.clamp(ratio, 1 - clip_range, 1 + clip_range)
    return -torch.min(ratio * advantages, clipped * advantages)
