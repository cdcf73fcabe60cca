"""What the learner is asked for (docs/contract.md §9, verbatim in meaning)."""

from exercises.framework import ExerciseSpec

SPEC = ExerciseSpec(
    slug="grpo-advantages",
    title="GRPO group-relative advantages",
    function_name="compute_grpo_advantages",
    summary="Normalize each answer's score within its group of answers to the same prompt.",
    order=9,
    description="""\
`compute_grpo_advantages(scores, group_size, eps=1e-6, scale_by_std=True)`

Group-relative outcome advantages: `scores` is `[N]` with N a multiple of `group_size`,
consecutive groups of `group_size` answers to one prompt. Each score minus its group's
mean, divided by (its group's unbiased std + eps) when `scale_by_std`. Returns `[N]`.
N not a multiple of `group_size`, `group_size < 2` (0 included: a `ValueError`, never a
`ZeroDivisionError`), scores that are not 1-D, or a negative `eps` raise `ValueError`.

A group whose scores are all equal gets exactly 0 (detect a zero spread; the float32 mean of
a constant group can be one rounding step off, and dividing that by eps gives garbage), never
NaN. Integer scores return float32; floating scores keep their dtype. The result is on the
scores' device; `scores` is not modified in place.
""",
)
