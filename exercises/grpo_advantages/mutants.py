"""Known mistakes of `grpo-advantages`: switches of the faulty reference (faulty.py).

``explains`` lists the checks each mistake can make fail; tests hold every single-fault mutant
to it over many seeds.
"""

from exercises.grpo_advantages.faulty import faulty_grpo_advantages
from exercises.mistakes import fault, fault_mutants, inplace_edit_fault, wrong_dtype_fault

SCALED = ("values_random", "all_equal", "eps_outside", "unbiased", "consecutive", "flat", "dtype_device")
ALL = SCALED + ("values_no_std",)

FAULTS = [
    fault(
        "whole-batch",
        "normalising over the whole batch: the mean and std must be each group's (the answers to "
        "one prompt), not the batch's",
        fix="Reshape to [N // group_size, group_size] and take the mean and std per row.",
        explains=ALL + ("not_multiple",),
        site="grouping",
    ),
    fault(
        "strided-groups",
        "strided groups: view(group_size, -1) groups scores i, i + N/G, ...; the groups are "
        "consecutive runs, view(-1, group_size)",
        fix="Group consecutive scores: scores.view(-1, group_size).",
        explains=ALL,
        site="grouping",
    ),
    fault(
        "biased-std",
        "biased std: dividing by G instead of G - 1 (the contract asks for the unbiased std)",
        fix="Use the unbiased std: std(dim=1, unbiased=True).",
        explains=SCALED,
        site="std",
    ),
    fault(
        "eps-inside-sqrt",
        "eps inside the square root: sqrt(var + eps) instead of std + eps",
        fix="Divide by (std + eps): eps goes outside the square root.",
        explains=SCALED,
        site="eps",
    ),
    fault(
        "no-eps",
        "no eps: dividing by the bare std instead of (std + eps); a nearly tied group blows up",
        fix="Divide by (std + eps).",
        explains=SCALED,
        site="eps",
    ),
    fault(
        "not-flattened",
        "result not flattened: the [N // group_size, group_size] view is returned instead of a [N] tensor",
        fix="Return advantages.reshape(-1), one per score.",
        explains=ALL,
        site="shape",
    ),
    fault(
        "no-value-error",
        "no check that N is a multiple of group_size: the reshape fails with a RuntimeError instead of a ValueError",
        fix="Raise ValueError when N % group_size != 0, before reshaping.",
        explains=("not_multiple",),
        site="multiple-check",
    ),
    fault(
        "constant-group-not-detected",
        "a group of equal scores is not detected: its float mean is a rounding step "
        "off, and that step divided by eps comes back as a large advantage instead of 0",
        fix="Give a group whose scores are all equal (max == min) exactly 0 advantage.",
        explains=("all_equal",),
        site="constant",
    ),
    fault(
        "modulo-before-group-size-check",
        "N % group_size computed before group_size is checked: group_size=0 "
        "raises ZeroDivisionError instead of ValueError",
        fix="Check group_size >= 2 first (a ValueError), then N % group_size.",
        explains=("not_multiple",),
        site="group-size-check",
    ),
    inplace_edit_fault("scores"),
    wrong_dtype_fault(("dtype_device", "eps_outside", "unbiased")),
    fault(
        "scale-flag-ignored",
        "scale_by_std=False ignored: the advantages are divided by (std + eps) anyway",
        fix="Divide by (std + eps) only when scale_by_std is True; otherwise return the centred scores.",
        explains=("values_no_std",),
        site="scale-flag",
    ),
]

# Built last (issue 37), so the catalogue's earlier mistakes keep their order.
FAULTS += [
    fault(
        "no-dim-check",
        "scores that are not 1-D accepted: [N // group_size, group_size] scores (already grouped) are "
        "reshaped and graded instead of raising ValueError",
        fix="Raise ValueError unless scores.dim() == 1: scores is a flat [N] tensor.",
        explains=("not_multiple",),
        site="dim-check",
    ),
]

MUTANTS = fault_mutants(faulty_grpo_advantages, FAULTS)
