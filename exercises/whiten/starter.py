"""Exercise whiten: masked advantage normalization.

Fill in the `# YOUR CODE` blocks, run `python this_file.py` for the self-tests, then submit
with `ppo-submit this_file.py`.
"""

import torch


def masked_whiten(values, mask=None, shift_mean=True, eps=1e-8):
    """Whiten values with the statistics of the valid positions of the whole batch.

    Args:
        values: any shape (e.g. [B, T] advantages).
        mask: same shape, 0/1 (float or bool) marking valid positions; None means every
            position is valid. Padded positions may hold any finite value: they must not
            enter the mean or the variance.
        shift_mean: when False, the mean is added back after scaling (only the scale changes).
        eps: added to the variance inside the square root.

    Conventions:
        mean = average of the valid values; var = unbiased variance of the valid values
        (Bessel's correction: divide by n_valid - 1);
        result = (values - mean) * rsqrt(var + eps), plus mean when shift_mean is False.
        Values at padded positions are not graded. Near-constant values must stay finite
        and exact (compute the variance from centered values). When every valid value is
        equal, the result is exactly 0 at valid positions (with shift_mean): detect the zero
        spread (max == min), since the float mean of equal values can be a rounding step off.

    Returns:
        A tensor shaped like values, in its dtype and on its device.

    Raises:
        ValueError naming the offending argument when mask's shape differs from values';
        ValueError when fewer than two values are valid (the unbiased variance is undefined).
    Must not modify its inputs in place.

    Graded (points in brackets; * counts only once the values on ordinary inputs are right):
        - whitened values on random padded inputs (valid positions); padded positions are not graded [20]
        - shift_mean=False adds the mean back [12]
        - unbiased variance (Bessel's correction) with few valid values [10]
        - any shape (1-D and 3-D, with and without a mask) [8]
        - near-constant and constant values: finite and exact; compute the variance from centered values; a
          constant input gives exactly 0 with shift_mean, never NaN: exactly 0 for seven valid 0.1s
          (float32): detect a zero spread, as their float32 mean is not exactly 0.1 [12]
        - non-default eps, inside the square root [6]
        - ValueError for fewer than two valid values [10*]
        - ValueError on a mask of another shape (no broadcasting) [8*]
        - result in the input's dtype (float32, float64, bfloat16) and device [8*]
        - inputs not modified in place [6*]

    Tolerance: values and gradients are compared with the reference per dtype: float64 within 1e-10
    relative (+1e-12 absolute), float32 within 1e-4 relative + 1e-5 absolute, bfloat16 within 2e-2
    relative + 2e-2 absolute. Where the valid values nearly cancel, the tolerance grows by their
    cancellation factor: plus n * u * |mean| / sqrt(var + eps) * (1 + |whitened value|) absolute, with n
    the number of valid values and u = 2.2e-16 for float64 inputs, 1.2e-7 otherwise (every correct
    variance formula stays within it; E[x^2] - E[x]^2 does not).
    """
    # YOUR CODE: check the mask's shape; a boolean "valid" tensor (all True when mask is None)

    # YOUR CODE: count the valid values; fewer than two is a ValueError

    # YOUR CODE: mean and unbiased variance over the valid values only

    # YOUR CODE: whiten; add the mean back when shift_mean is False
    raise NotImplementedError("masked_whiten is not written yet")


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
    # Seven 0.1s: their float32 mean is a rounding step off 0.1; the zero spread still gives exactly 0.
    assert torch.equal(masked_whiten(torch.full((7,), 0.1)), torch.zeros(7))
    # One valid value: the unbiased variance is undefined.
    try:
        masked_whiten(values, torch.tensor([[1.0, 0.0, 0.0]]))
    except ValueError:
        pass
    else:
        raise AssertionError("expected ValueError for a single valid value")
    print("self-tests passed")
