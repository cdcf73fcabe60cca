"""Advantage whitening with torch.var_mean."""

import torch


def masked_whiten(values, mask=None, shift_mean=True, eps=1e-8):
    if mask is None:
        flat = values.reshape(-1)
    else:
        if mask.shape != values.shape:
            raise ValueError("mask and values must have the same shape")
        flat = values[mask.bool()]
    if flat.numel() < 2:
        raise ValueError(f"at least two valid values are needed, got {flat.numel()}")
    if flat.dtype in (torch.float16, torch.bfloat16):
        flat = flat.float()

    var, mean = torch.var_mean(flat, correction=1)
    if torch.all(flat == flat[0]):
        scaled = torch.zeros_like(values, dtype=flat.dtype)
    else:
        scaled = (values.to(flat.dtype) - mean) / torch.sqrt(var + eps)
    if not shift_mean:
        scaled = scaled + mean
    return scaled.to(values.dtype)


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
