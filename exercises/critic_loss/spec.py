"""What the learner is asked for (docs/contract.md §4, verbatim in meaning)."""

from exercises.framework import ExerciseSpec

SPEC = ExerciseSpec(
    slug="critic-loss",
    title="PPO critic loss with value clipping",
    function_name="compute_critic_loss",
    summary="The masked value loss, with optional clipping of the new values around the old ones.",
    order=4,
    description="""\
`compute_critic_loss(values, old_values, returns, mask=None, clip_range=None)`

Value loss with optional value clipping. With `clip_range` (any number, 0 included):
`v_clipped = old_values + clamp(values - old_values, -clip_range, clip_range)`,
per token `max((v_clipped - R)^2, (values - R)^2)`; without it (`clip_range=None`)
`(values - R)^2`. Masked mean over dim=1, mean over the batch, times 0.5.

Inputs are `[B, T]`; `mask` is a `[B, T]` tensor of 0/1 (float or bool), right-padded; `None`
means every position is valid. Inputs at padded positions may hold any finite value and must
not leak into the result. A row with no valid token contributes 0 to the batch mean (it still
counts in it), never a NaN.

All tensor arguments share one shape (otherwise `ValueError` naming the argument; no
broadcasting). Returns a 0-dim tensor in the inputs' dtype and on their device; inputs are not
modified in place. Gradient flows to `values` only (none to `old_values` or `returns`).
""",
)
