"""What the learner is asked for (docs/contract.md §5, verbatim in meaning)."""

from exercises.framework import ExerciseSpec

SPEC = ExerciseSpec(
    slug="token-rewards",
    title="KL-shaped per-token rewards",
    function_name="compute_token_rewards",
    summary="Per-token rewards: a KL penalty on every valid token plus the score at the last one.",
    order=5,
    description="""\
`compute_token_rewards(scores, log_probs_old, ref_log_probs, mask=None, kl_coef=0.1)`

KL-shaped per-token rewards. `scores` is `[B]` (the reward model's score per response);
`log_probs_old` and `ref_log_probs` are `[B, T]`. On valid tokens
`reward = -kl_coef * (log_probs_old - ref_log_probs)`; padding is 0; `scores[b]` is added at
the last valid token of row b (a row with no valid token is all 0).

`mask` is a `[B, T]` tensor of 0/1 (float or bool), right-padded (each row is ones, then
zeros); `None` means every position is valid. Inputs at padded positions may hold any finite
value and must not leak into the result.

`ref_log_probs` and `mask` must have the shape of `log_probs_old`, and `scores` must be `[B]`
(otherwise `ValueError` naming the argument; no broadcasting). Returns `[B, T]`, detached
(it never requires grad, even when an input does), in the inputs' dtype and on their device;
inputs are not modified in place.
""",
)
