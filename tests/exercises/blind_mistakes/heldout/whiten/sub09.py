"""Exercise whiten: masked advantage normalization."""

import torch


def masked_mean(values, mask):
    return (values * mask).sum() / mask.sum()


def masked_var(values, mask, unbiased=True):
    mean = masked_mean(values, mask)
    centered_values = values - mean
    variance = masked_mean(centered_values ** 2, mask)
    if unbiased:
        mask_sum = mask.sum()
        if mask_sum < 2:
            raise ValueError("mask: fewer than two valid values, the unbiased variance is undefined")
        bessel_correction = mask_sum / (mask_sum - 1)
        variance = variance * bessel_correction
    return variance


def masked_whiten(values, mask=None, shift_mean=True, eps=1e-8):
    if mask is not None and mask.shape != values.shape:
        raise ValueError("mask must have the same shape as values")
    valid = torch.ones_like(values, dtype=torch.bool) if mask is None else mask.bool()
    if int(valid.sum()) < 2:
        raise ValueError("mask: fewer than two valid values, the unbiased variance is undefined")
    m = torch.ones_like(values)
    x = values.masked_fill_(~valid, 0.0)  # padding may be huge: keep it out of the sums
    lo = torch.where(valid, values, torch.full_like(values, float("inf"))).min()
    hi = torch.where(valid, values, torch.full_like(values, float("-inf"))).max()

    mean, var = masked_mean(x, m), masked_var(x, m, unbiased=False)
    if bool(lo == hi):
        whitened = torch.zeros_like(values)
    else:
        whitened = (values - mean) * torch.rsqrt(var + eps)
    if not shift_mean:
        whitened += mean  # whitened is a fresh tensor, not an input
    return whitened


if __name__ == "__main__":
    # Two valid values 1 and 3 (the 100 is padding): mean 2, unbiased variance
    # ((1-2)^2 + (3-2)^2) / (2 - 1) = 2, so the whitened values are -+1/sqrt(2).
    values = torch.tensor([[1.0, 3.0, 100.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    out = masked_whiten(values, mask)
    assert torch.allclose(out[mask.bool()], torch.tensor([-0.70710677, 0.70710677])), out
    # shift_mean=False keeps the mean: 2 -+ 1/sqrt(2).
    out = masked_whiten(values, mask, shift_mean=False)
    assert torch.allclose(out[mask.bool()], torch.tensor([1.29289323, 2.70710677])), out
    # No mask: 1, 2, 3, 4 have mean 2.5 and unbiased variance 5/3.
    out = masked_whiten(torch.tensor([1.0, 2.0, 3.0, 4.0]))
    assert torch.allclose(out, torch.tensor([-1.5, -0.5, 0.5, 1.5]) / (5 / 3) ** 0.5), out
    # Constant values: variance 0, the eps keeps the result finite (and 0).
    assert torch.equal(masked_whiten(torch.full((4,), 3.0)), torch.zeros(4))
    # One valid value: the unbiased variance is undefined.
    try:
        masked_whiten(values, torch.tensor([[1.0, 0.0, 0.0]]))
    except ValueError:
        pass
    else:
        raise AssertionError("expected ValueError for a single valid value")
    print("self-tests passed")
