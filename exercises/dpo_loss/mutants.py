"""Known mistakes of `dpo-loss`: switches of the faulty reference (faulty.py).

``explains`` lists the checks each mistake can make fail; tests hold every single-fault mutant
to it over many seeds.
"""

from exercises.dpo_loss.faulty import faulty_dpo_loss
from exercises.mistakes import fault, fault_mutants, inplace_edit_fault, wrong_dtype_fault

LOSS = ("loss_default", "loss_custom_beta", "worked_values", "gradient", "stable", "dtype_device")
REWARDS = ("rewards", "worked_values", "dtype_device", "stable")

FAULTS = [
    fault(
        "rewards-not-detached",
        "rewards not detached: the returned chosen/rejected rewards still carry gradient into the policy",
        fix="Return chosen_rewards.detach() and rejected_rewards.detach(); compute the loss from the undetached terms.",
        explains=("detached",),
        site="rewards-detach",
    ),
    fault(
        "ref-policy-swapped",
        "policy and reference swapped: the implicit reward is beta * (policy - reference), not reference - policy",
        fix="chosen_rewards = beta * (policy_chosen_logps - ref_chosen_logps), likewise rejected.",
        explains=LOSS + REWARDS,
        site="logratio",
    ),
    fault(
        "beta-missing",
        "beta missing from the loss: the sigmoid gets the raw log-ratio difference instead of beta times it",
        fix="loss = -logsigmoid(chosen_rewards - rejected_rewards), with beta inside the rewards.",
        explains=LOSS,
        site="beta",
    ),
    fault(
        "log-of-sigmoid",
        "log(sigmoid(x)) instead of logsigmoid(x): sigmoid underflows to 0 for large negative "
        "reward gaps, so the loss becomes inf",
        fix="Use F.logsigmoid(x): it stays finite and exact for large gaps.",
        explains=("stable",),
        site="logsigmoid",
    ),
    fault(
        "chosen-rejected-swapped",
        "chosen and rejected swapped in the loss: it pushes the policy towards the rejected answers",
        fix="The loss is -logsigmoid(chosen_rewards - rejected_rewards).",
        explains=LOSS,
        site="gap-sign",
    ),
    fault(
        "reference-ignored",
        "reference model ignored: the rewards use the policy log-probs alone instead of the log-ratio to the reference",
        fix="Subtract the reference log-probs: beta * (policy - reference).",
        explains=LOSS + REWARDS,
        site="logratio",
    ),
    fault(
        "loss-from-detached",
        "loss computed from the detached rewards: no gradient reaches the policy, so it never learns",
        fix="Compute the loss from the undetached rewards; detach only the two returned rewards.",
        explains=("gradient", "stable"),
        site="loss-detach",
    ),
    fault(
        "no-shape-check",
        "no shape check: a [B, 1] log-prob tensor silently broadcasts against [B] ones",
        fix="Raise ValueError naming the argument when the four inputs differ in shape.",
        explains=("shape_errors",),
        site="shape",
        signature="no-value-error",
    ),
    inplace_edit_fault("ref_chosen_logps"),
    wrong_dtype_fault(("dtype_device", "worked_values")),
    fault(
        "reference-added",
        "the reference log-ratio added instead of subtracted: (pi_c - pi_r) + (ref_c - ref_r)",
        fix="The DPO logit is beta * ((pi_c - pi_r) - (ref_c - ref_r)): subtract the reference's log-ratio.",
        explains=("loss_default", "loss_custom_beta", "worked_values", "gradient", "stable", "dtype_device"),
        site="loss-reference",
    ),
    fault(
        "missing-minus",
        "missing minus sign: the loss is -logsigmoid(...), the negative log-likelihood",
        fix="Return mean(-logsigmoid(chosen_rewards - rejected_rewards)).",
        explains=("loss_default", "loss_custom_beta", "worked_values", "gradient", "stable", "dtype_device"),
        site="sign",
    ),
    fault(
        "sum-not-mean",
        "sum instead of mean over the pairs",
        fix="Average the per-pair losses with .mean(), not .sum().",
        explains=("loss_default", "loss_custom_beta", "worked_values", "gradient", "stable", "dtype_device"),
        site="reduce",
    ),
    fault(
        "rewards-without-beta",
        "rewards returned without beta: chosen_rewards is beta * (policy - reference), not the raw log-ratio",
        fix="Return beta * (policy_chosen_logps - ref_chosen_logps) (and likewise rejected), detached.",
        explains=("rewards", "worked_values", "dtype_device"),
        site="rewards-beta",
    ),
    fault(
        "rewards-swapped",
        "rewards returned in the wrong order: the result is (loss, chosen_rewards, rejected_rewards)",
        fix="Return (loss, chosen_rewards, rejected_rewards) in that order.",
        explains=("rewards", "worked_values", "dtype_device"),
        site="rewards-order",
    ),
]

MUTANTS = fault_mutants(faulty_dpo_loss, FAULTS)
