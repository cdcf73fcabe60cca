"""Known-wrong solutions of `pairwise-loss`, each embodying one misconception.

Each function is self-contained (torch, F and math only) so it can be submitted as a file.
"""

import math  # noqa: F401  (available to submitted mutants)

import torch
import torch.nn.functional as F

from exercises.framework import mutant


@mutant("log(sigmoid(x)) instead of logsigmoid(x): sigmoid underflows to 0 for large negative gaps, so the loss becomes inf")
def log_of_sigmoid(chosen_rewards, rejected_rewards, margin=None):
    if rejected_rewards.shape != chosen_rewards.shape:
        raise ValueError("rejected_rewards has the wrong shape")
    if isinstance(margin, torch.Tensor) and margin.shape != chosen_rewards.shape:
        raise ValueError("margin has the wrong shape")
    x = chosen_rewards - rejected_rewards
    if margin is not None:
        x = x - margin
    return -torch.log(torch.sigmoid(x)).mean()


@mutant("margin with the wrong sign: adding it makes the pair easier, but the chosen reward must beat the rejected one by the margin")
def margin_added(chosen_rewards, rejected_rewards, margin=None):
    if rejected_rewards.shape != chosen_rewards.shape:
        raise ValueError("rejected_rewards has the wrong shape")
    if isinstance(margin, torch.Tensor) and margin.shape != chosen_rewards.shape:
        raise ValueError("margin has the wrong shape")
    x = chosen_rewards - rejected_rewards
    if margin is not None:
        x = x + margin
    return -F.logsigmoid(x).mean()


@mutant("margin ignored: the margin argument is never subtracted from the gap")
def margin_ignored(chosen_rewards, rejected_rewards, margin=None):
    if rejected_rewards.shape != chosen_rewards.shape:
        raise ValueError("rejected_rewards has the wrong shape")
    if isinstance(margin, torch.Tensor) and margin.shape != chosen_rewards.shape:
        raise ValueError("margin has the wrong shape")
    return -F.logsigmoid(chosen_rewards - rejected_rewards).mean()


@mutant("chosen and rejected swapped: the loss rewards preferring the rejected answer")
def swapped(chosen_rewards, rejected_rewards, margin=None):
    if rejected_rewards.shape != chosen_rewards.shape:
        raise ValueError("rejected_rewards has the wrong shape")
    if isinstance(margin, torch.Tensor) and margin.shape != chosen_rewards.shape:
        raise ValueError("margin has the wrong shape")
    x = rejected_rewards - chosen_rewards
    if margin is not None:
        x = x - margin
    return -F.logsigmoid(x).mean()


@mutant("sum instead of mean over the pairs")
def sum_not_mean(chosen_rewards, rejected_rewards, margin=None):
    if rejected_rewards.shape != chosen_rewards.shape:
        raise ValueError("rejected_rewards has the wrong shape")
    if isinstance(margin, torch.Tensor) and margin.shape != chosen_rewards.shape:
        raise ValueError("margin has the wrong shape")
    x = chosen_rewards - rejected_rewards
    if margin is not None:
        x = x - margin
    return -F.logsigmoid(x).sum()


@mutant("dividing the sum by len(x), the first dimension only, instead of averaging over every element")
def divide_by_len(chosen_rewards, rejected_rewards, margin=None):
    if rejected_rewards.shape != chosen_rewards.shape:
        raise ValueError("rejected_rewards has the wrong shape")
    if isinstance(margin, torch.Tensor) and margin.shape != chosen_rewards.shape:
        raise ValueError("margin has the wrong shape")
    x = chosen_rewards - rejected_rewards
    if margin is not None:
        x = x - margin
    return -F.logsigmoid(x).sum() / len(chosen_rewards)


@mutant("no shape check: [B, 1] rewards against [B] silently broadcast into a [B, B] matrix of pairs")
def no_shape_check(chosen_rewards, rejected_rewards, margin=None):
    x = chosen_rewards - rejected_rewards
    if margin is not None:
        x = x - margin
    return -F.logsigmoid(x).mean()
