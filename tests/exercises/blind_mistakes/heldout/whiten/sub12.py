"""Exercise whiten: masked advantage normalization."""

import torch


def masked_whiten(values, mask=None, shift_mean=True, eps=1e-8):
    valid = torch.ones_like(values, dtype=torch.bool) if mask is None else mask.bool()
    work = torch.float32 if values.dtype in (torch.bfloat16, torch.float16) else values.dtype
    m = valid.reshape(-1).to(work)
    x = values.reshape(-1).to(work).masked_fill(~valid.reshape(-1), 0.0)
    n = torch.einsum("i->", m)
    mean = torch.einsum("i,i->", x, m) / n
    c = (x - mean) * m
    var = torch.einsum("i,i->", c, c) / (n - 1)
    spread_zero = bool((x.masked_fill(m == 0, float("-inf")).max() == x.masked_fill(m == 0, float("inf")).min()))
    full = values.reshape(-1).to(work)
    out = torch.zeros_like(full) if spread_zero else (full - mean) * torch.rsqrt(var + 1e-8)
    if not shift_mean:
        out = out + mean
    return out.reshape(values.shape).to(values.dtype)


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
