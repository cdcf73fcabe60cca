"""What the learner is asked for (docs/contract.md §6, verbatim in meaning)."""

from exercises.framework import ExerciseSpec

SPEC = ExerciseSpec(
    slug="pairwise-loss",
    title="Pairwise (Bradley-Terry) reward-model loss",
    function_name="compute_pairwise_loss",
    summary="The reward model's preference loss, with an optional margin, stable for large gaps.",
    order=6,
    description="""\
`compute_pairwise_loss(chosen_rewards, rejected_rewards, margin=None)`

Bradley-Terry reward-model loss: `mean(-logsigmoid(chosen - rejected - margin))` over all
elements; `margin` is None (no margin), a Python number, a 0-dim tensor (a scalar margin), or a
tensor of exactly the rewards' shape; any other tensor shape raises `ValueError`. Any shape;
`chosen_rewards` and `rejected_rewards` must have equal shapes (otherwise `ValueError` naming
the argument; no broadcasting). Returns a
0-dim tensor in the inputs' dtype and on their device; inputs are not modified in place;
gradient flows to both reward tensors.
Must stay finite and exact for large gaps: a gap `chosen - rejected` of -200 gives a loss of
200 per pair (`log(sigmoid(x))` underflows to `log(0)` there; use a stable form), and its
gradient must be right everywhere, a gap of exactly 0 included (-0.5 per pair before the
mean: beware forms built from `abs`/`clamp` whose subgradient at 0 differs).
Worked values: equal rewards give `log 2 = 0.6931`; a gap of +1 gives 0.3133; a gap of +1
with `margin=1.0` gives `log 2` again.
""",
)
