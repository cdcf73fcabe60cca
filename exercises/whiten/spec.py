"""What the learner is asked for (docs/contract.md §7, verbatim in meaning)."""

from exercises.framework import ExerciseSpec

SPEC = ExerciseSpec(
    slug="whiten",
    title="Masked whitening",
    function_name="masked_whiten",
    summary="Normalize values with the mean and unbiased variance of the valid positions.",
    order=7,
    description="""\
`masked_whiten(values, mask=None, shift_mean=True, eps=1e-8)`

Advantage normalization over the valid tokens of the whole batch: mean and unbiased
variance (Bessel's correction) over valid positions;
`(values - mean) * rsqrt(var + eps)`, plus `mean` added back when `shift_mean` is False.
Values at padding positions are not graded. Any shape. Fewer than two valid values
raise `ValueError` (the unbiased variance is undefined).

`mask` has the shape of `values` (0/1, float or bool; otherwise `ValueError` naming the
argument, no broadcasting); `mask=None` means every position is valid. Inputs at padded
positions may hold any finite value: they must not leak into the statistics. The result has
the shape of `values`, in its dtype and on its device; inputs are not modified in place.
Near-constant values must give finite, exact results: compute the variance from centered
values. A constant input gives exactly 0 at valid positions (with `shift_mean`), never a NaN,
whatever the constant (the float32 mean of seven 0.1s is not exactly 0.1, so detect a zero
spread as grpo does).
""",
)
