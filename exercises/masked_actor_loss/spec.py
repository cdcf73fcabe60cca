"""What the learner is asked for (docs/contract.md §2, verbatim in meaning)."""

from exercises.framework import ExerciseSpec

SPEC = ExerciseSpec(
    slug="masked-actor-loss",
    title="Masked PPO actor loss: sequence-mean vs token-mean",
    function_name="compute_masked_actor_loss",
    summary="The PPO clipped loss over padded [B, T] responses, aggregated per sequence or per token.",
    order=2,
    description="""\
`compute_masked_actor_loss(log_probs_new, log_probs_old, advantages, action_mask=None, clip_range=0.2, loss_agg_mode="seq-mean-token-mean")`

The same per-token clipped loss as `actor-loss`
(`-min(ratio * A, clamp(ratio, 1 - clip_range, 1 + clip_range) * A)`, `ratio = exp(new - old)`)
over `[B, T]` inputs, aggregated by `loss_agg_mode`:

- `"seq-mean-token-mean"` (the course material's `PolicyLoss`): masked mean over dim=1, then
  mean over the batch;
- `"token-mean"`: sum over all valid tokens of the batch divided by their count (the default
  of most RLHF libraries; long answers weigh more).

Any other mode raises `ValueError`. `action_mask` is a `[B, T]` tensor of 0/1 (float or bool),
right-padded; `None` means every position is valid. Inputs at padded positions may hold any
finite value and must not leak into the result. A row with no valid token contributes 0 to the
batch mean (it still counts in it), never a NaN.

All tensor arguments share one shape (otherwise `ValueError` naming the argument; no
broadcasting). Returns a 0-dim tensor in the inputs' dtype and on their device; inputs are not
modified in place. Gradient flows to `log_probs_new`.
""",
)
