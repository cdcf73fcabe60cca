"""Masked whitening with torch.where sums (no boolean indexing)."""

import torch


def masked_whiten(values, mask=None, shift_mean=True, eps=1e-8):
    """(values - mean) / sqrt(var + eps) over the valid positions of the whole batch."""
    if mask is None:
        m = torch.ones_like(values, dtype=torch.bool)
    else:
        if mask.shape != values.shape:
            raise ValueError(f"mask must have the shape of values {tuple(values.shape)}, got {tuple(mask.shape)}")
        m = mask != 0
    count = m.sum()
    if count < 2:
        raise ValueError("need at least 2 valid values to compute an unbiased variance")

    acc = torch.float64 if values.dtype == torch.float64 else torch.float32
    x = torch.where(m, values, torch.zeros_like(values)).to(acc)
    mean = x.sum() / count
    centered = torch.where(m, x - mean, torch.zeros_like(x))
    var = (centered * centered).sum() / (count - 1)

    out = torch.where(var == 0, torch.zeros_like(x), (x - mean) * torch.rsqrt(var + eps))
    if not shift_mean:
        out = out + mean
    return out.to(values.dtype)


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
