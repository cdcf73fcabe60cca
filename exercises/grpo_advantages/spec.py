"""What the learner is asked for (EXERCISES.md section 9, verbatim in meaning)."""

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
N not a multiple of `group_size` raises `ValueError`.

A group whose scores are all equal gets advantage 0 (never NaN). The result is in the
scores' dtype and on their device; `scores` is not modified in place.
""",
)
