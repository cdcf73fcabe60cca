"""Exercise whiten: masked advantage normalization."""

import torch


def masked_whiten(values, mask=None, shift_mean=True, eps=1e-8):
    if mask is not None and mask.shape != values.shape:
        raise ValueError("mask: shape mismatch with values")
    valid = torch.ones_like(values, dtype=torch.bool) if mask is None else mask != 0
    work = torch.float32 if values.dtype in (torch.bfloat16, torch.float16) else values.dtype
    flat_v = values.reshape(-1).to(work)
    flat_ok = valid.reshape(-1)
    total = int(flat_ok.sum())

    chunk = 64
    n_a, mean_a, m2_a = 0, None, None
    lo = hi = None
    for start in range(0, flat_v.numel(), chunk):
        x = flat_v[start:start + chunk][flat_ok[start:start + chunk]]
        n_b = x.numel()
        if n_b == 0:
            continue
        mean_b = x.mean()
        m2_b = ((x - mean_b) ** 2).sum()
        lo = x.min() if lo is None else torch.minimum(lo, x.min())
        hi = x.max() if hi is None else torch.maximum(hi, x.max())
        if n_a == 0:
            n_a, mean_a, m2_a = n_b, mean_b, m2_b
            continue
        n = n_a + n_b
        delta = mean_b - mean_a
        mean_a = mean_a + delta * (n_b / n)
        m2_a = m2_a + m2_b + delta * delta * (n_a * n_b / n)
        n_a = n
    var = m2_a / (n_a - 1)
    if bool(lo == hi):
        out = torch.zeros_like(flat_v)
    else:
        out = (flat_v - mean_a) / (torch.sqrt(var) + eps)
    if shift_mean:
        out = out + mean_a
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
