"""Known-wrong solutions of `grpo-advantages`, each embodying one misconception.

Each function is self-contained (torch, F and math only) so it can be submitted as a file.
"""

import torch

from exercises.framework import mutant


@mutant("normalising over the whole batch: the mean and std must be each group's (the answers to one prompt), not the batch's")
def whole_batch(scores, group_size, eps=1e-6, scale_by_std=True):
    if scores.shape[0] % group_size:
        raise ValueError("N is not a multiple of group_size")
    adv = scores - scores.mean()
    if scale_by_std:
        adv = adv / (scores.std() + eps)
    return adv


@mutant("strided groups: view(group_size, -1) groups scores i, i + N/G, ...; the groups are consecutive runs, view(-1, group_size)")
def strided_groups(scores, group_size, eps=1e-6, scale_by_std=True):
    if scores.shape[0] % group_size:
        raise ValueError("N is not a multiple of group_size")
    g = scores.view(group_size, -1)
    adv = g - g.mean(dim=0, keepdim=True)
    if scale_by_std:
        adv = adv / (g.std(dim=0, keepdim=True) + eps)
    return adv.reshape(-1)


@mutant("biased std: dividing by G instead of G - 1 (the contract asks for the unbiased std)")
def biased_std(scores, group_size, eps=1e-6, scale_by_std=True):
    if scores.shape[0] % group_size:
        raise ValueError("N is not a multiple of group_size")
    g = scores.view(-1, group_size)
    adv = g - g.mean(dim=1, keepdim=True)
    if scale_by_std:
        adv = adv / (g.std(dim=1, keepdim=True, unbiased=False) + eps)
    return adv.reshape(-1)


@mutant("eps inside the square root: sqrt(var + eps) instead of std + eps")
def eps_inside_sqrt(scores, group_size, eps=1e-6, scale_by_std=True):
    if scores.shape[0] % group_size:
        raise ValueError("N is not a multiple of group_size")
    g = scores.view(-1, group_size)
    adv = g - g.mean(dim=1, keepdim=True)
    if scale_by_std:
        adv = adv / torch.sqrt(g.var(dim=1, keepdim=True) + eps)
    return adv.reshape(-1)


@mutant("no eps: a group of all-equal scores has std 0 and gives 0 / 0 = NaN")
def no_eps(scores, group_size, eps=1e-6, scale_by_std=True):
    if scores.shape[0] % group_size:
        raise ValueError("N is not a multiple of group_size")
    g = scores.view(-1, group_size)
    adv = g - g.mean(dim=1, keepdim=True)
    if scale_by_std:
        adv = adv / g.std(dim=1, keepdim=True)
    return adv.reshape(-1)


@mutant("result not flattened: the [N // group_size, group_size] view is returned instead of a [N] tensor")
def not_flattened(scores, group_size, eps=1e-6, scale_by_std=True):
    if scores.shape[0] % group_size:
        raise ValueError("N is not a multiple of group_size")
    g = scores.view(-1, group_size)
    adv = g - g.mean(dim=1, keepdim=True)
    if scale_by_std:
        adv = adv / (g.std(dim=1, keepdim=True) + eps)
    return adv


@mutant("no check that N is a multiple of group_size: the reshape fails with a RuntimeError instead of a ValueError")
def no_value_error(scores, group_size, eps=1e-6, scale_by_std=True):
    g = scores.view(-1, group_size)
    adv = g - g.mean(dim=1, keepdim=True)
    if scale_by_std:
        adv = adv / (g.std(dim=1, keepdim=True) + eps)
    return adv.reshape(-1)
