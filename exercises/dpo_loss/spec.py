"""What the learner is asked for (docs/contract.md §10, verbatim in meaning)."""

from exercises.framework import ExerciseSpec

SPEC = ExerciseSpec(
    slug="dpo-loss",
    title="DPO loss",
    function_name="compute_dpo_loss",
    summary="Direct Preference Optimization: the loss and the implicit rewards.",
    order=10,
    description="""\
`compute_dpo_loss(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps, beta=0.1) -> (loss, chosen_rewards, rejected_rewards)`

Inputs are `[B]` sequence log-probabilities of the chosen and rejected answers under the
policy and under the frozen reference model; all four must have the same shape (otherwise
`ValueError` naming the argument; no broadcasting).
`chosen_rewards = beta * (policy_chosen - ref_chosen)`, likewise `rejected_rewards`; both are
returned detached (they never require grad).
`loss = mean(-logsigmoid(chosen_rewards - rejected_rewards))`, a 0-dim tensor computed from
the undetached terms, so the gradient flows to the two policy inputs. Must stay finite and
exact for large gaps (a `chosen_rewards - rejected_rewards` of -200 gives a loss of 200).
All three results are in the inputs' dtype and on their device; inputs are not modified in
place. Worked values: equal log-ratios give a loss of `log 2 = 0.6931` and rewards 0;
policy chosen -10, rejected -12, reference -11 and -11, beta 0.1: rewards 0.1 and -0.1,
loss `-logsigmoid(0.2) = 0.5981`.
""",
)
