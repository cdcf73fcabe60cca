"""What the learner is asked for: with the starter, the only part of the exercise learners see."""

from exercises.framework import ExerciseSpec

SPEC = ExerciseSpec(
    slug="rloo-advantages",
    title="RLOO leave-one-out advantages",
    function_name="compute_rloo_advantages",
    summary="REINFORCE leave-one-out advantages: each answer's score minus the mean of the other answers of its group.",
    order=100,
    description="""\
`compute_rloo_advantages(scores, group_size)`

RLOO (REINFORCE Leave-One-Out, Ahmadian et al. 2024): `scores` is `[N]`, consecutive groups of
`group_size` answers sampled for one prompt. Each answer's baseline is the mean score of the
*other* `group_size - 1` answers of its group, so it never includes the answer itself:
`A_i = s_i - (sum_group - s_i) / (group_size - 1)`. Returns `[N]`, in the scores' floating dtype
and on their device, detached (no gradient flows back to `scores`). Within a group the
advantages sum to 0.

`scores` that are not 1-D, `group_size < 2` (no other answer to compare with) or `N` not a
multiple of `group_size` raise `ValueError`. Inputs are not modified in place.
""",
)
