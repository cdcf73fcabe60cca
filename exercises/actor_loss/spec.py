"""What the learner is asked for (docs/contract.md §1, verbatim in meaning)."""

from exercises.framework import ExerciseSpec

SPEC = ExerciseSpec(
    slug="actor-loss",
    title="PPO clipped actor loss",
    function_name="compute_actor_loss",
    summary="The PPO clipped surrogate objective over any shape.",
    order=1,
    description="""\
`compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2)`

PPO clipped surrogate, as the course chapter "RLHF PPO Memory" defines it.
`ratio = exp(log_probs_new - log_probs_old)`;
`loss = -mean(min(ratio * A, clamp(ratio, 1 - clip_range, 1 + clip_range) * A))` over all
elements. Any shape, all three equal (otherwise `ValueError` naming the argument). Returns a
0-dim tensor in the inputs' dtype and on their device; inputs are not modified in place.
Gradient flows to `log_probs_new`; where the clipped term is the minimum, that element's
gradient is 0. Worked values: ratio 2, A = +1 gives -1.2; ratio 0.5, A = -1 gives 0.8.
""",
)
