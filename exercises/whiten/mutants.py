"""Known-wrong solutions of `whiten`, each embodying one misconception.

Each function is self-contained (torch, F and math only) so it can be submitted as a file.
"""

import torch

from exercises.framework import mutant


@mutant("biased variance: dividing by n instead of n - 1 (the contract asks for Bessel's correction)")
def biased_variance(values, mask=None, shift_mean=True, eps=1e-8):
    if mask is not None and mask.shape != values.shape:
        raise ValueError("mask shape")
    m = torch.ones_like(values) if mask is None else mask.to(values.dtype)
    n = m.sum()
    if n < 2:
        raise ValueError("fewer than two valid values")
    mean = (values * m).sum() / n
    var = (((values - mean) * m) ** 2).sum() / n
    out = (values - mean) * torch.rsqrt(var + eps)
    return out if shift_mean else out + mean


@mutant("statistics over padding: the mean and variance include the padded positions instead of the valid ones only")
def stats_over_padding(values, mask=None, shift_mean=True, eps=1e-8):
    if mask is not None and mask.shape != values.shape:
        raise ValueError("mask shape")
    if mask is not None and int((mask != 0).sum()) < 2 or values.numel() < 2:
        raise ValueError("fewer than two valid values")
    mean = values.mean()
    var = values.var(unbiased=True)
    out = (values - mean) * torch.rsqrt(var + eps)
    return out if shift_mean else out + mean


@mutant("masked sums divided by the total number of elements instead of the number of valid ones")
def count_all_elements(values, mask=None, shift_mean=True, eps=1e-8):
    if mask is not None and mask.shape != values.shape:
        raise ValueError("mask shape")
    m = torch.ones_like(values) if mask is None else mask.to(values.dtype)
    if m.sum() < 2:
        raise ValueError("fewer than two valid values")
    n = values.numel()
    mean = (values * m).sum() / n
    var = (((values - mean) * m) ** 2).sum() / (n - 1)
    out = (values - mean) * torch.rsqrt(var + eps)
    return out if shift_mean else out + mean


@mutant("shift_mean=False ignored: the mean must be added back after scaling when shift_mean is False")
def mean_not_added_back(values, mask=None, shift_mean=True, eps=1e-8):
    if mask is not None and mask.shape != values.shape:
        raise ValueError("mask shape")
    m = torch.ones_like(values) if mask is None else mask.to(values.dtype)
    n = m.sum()
    if n < 2:
        raise ValueError("fewer than two valid values")
    mean = (values * m).sum() / n
    var = (((values - mean) * m) ** 2).sum() / (n - 1)
    return (values - mean) * torch.rsqrt(var + eps)


@mutant("eps outside the square root: dividing by (std + eps) instead of multiplying by rsqrt(var + eps)")
def eps_outside_sqrt(values, mask=None, shift_mean=True, eps=1e-8):
    if mask is not None and mask.shape != values.shape:
        raise ValueError("mask shape")
    m = torch.ones_like(values) if mask is None else mask.to(values.dtype)
    n = m.sum()
    if n < 2:
        raise ValueError("fewer than two valid values")
    mean = (values * m).sum() / n
    var = (((values - mean) * m) ** 2).sum() / (n - 1)
    out = (values - mean) / (torch.sqrt(var) + eps)
    return out if shift_mean else out + mean


@mutant("no eps at all: dividing by the bare standard deviation, so constant values give 0 / 0 = NaN")
def no_eps(values, mask=None, shift_mean=True, eps=1e-8):
    if mask is not None and mask.shape != values.shape:
        raise ValueError("mask shape")
    m = torch.ones_like(values) if mask is None else mask.to(values.dtype)
    n = m.sum()
    if n < 2:
        raise ValueError("fewer than two valid values")
    mean = (values * m).sum() / n
    var = (((values - mean) * m) ** 2).sum() / (n - 1)
    out = (values - mean) / torch.sqrt(var)
    return out if shift_mean else out + mean


@mutant("one-pass variance E[x^2] - E[x]^2: catastrophic cancellation when the values are large and nearly equal")
def one_pass_variance(values, mask=None, shift_mean=True, eps=1e-8):
    if mask is not None and mask.shape != values.shape:
        raise ValueError("mask shape")
    m = torch.ones_like(values) if mask is None else mask.to(values.dtype)
    n = m.sum()
    if n < 2:
        raise ValueError("fewer than two valid values")
    mean = (values * m).sum() / n
    mean_sq = (values * values * m).sum() / n
    var = (mean_sq - mean * mean) * n / (n - 1)
    out = (values - mean) * torch.rsqrt(var + eps)
    return out if shift_mean else out + mean


@mutant("no check for fewer than two valid values: the unbiased variance divides by n - 1 = 0 and the result is NaN")
def no_count_check(values, mask=None, shift_mean=True, eps=1e-8):
    if mask is not None and mask.shape != values.shape:
        raise ValueError("mask shape")
    m = torch.ones_like(values) if mask is None else mask.to(values.dtype)
    n = m.sum()
    mean = (values * m).sum() / n
    var = (((values - mean) * m) ** 2).sum() / (n - 1)
    out = (values - mean) * torch.rsqrt(var + eps)
    return out if shift_mean else out + mean
