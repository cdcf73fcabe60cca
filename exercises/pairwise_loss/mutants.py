"""Known mistakes of `pairwise-loss`: switches of the faulty reference (faulty.py).

``explains`` lists the checks each mistake can make fail; tests hold every single-fault mutant
to it over many seeds.
"""

from exercises.mistakes import fault, fault_mutants, inplace_edit_fault, wrong_dtype_fault
from exercises.pairwise_loss.faulty import faulty_pairwise_loss

MARGIN = (
    "values_float_margin",
    "values_tensor_margin",
    "worked_values",
    "stable",
    "gradient",
    "dtype_device",
    "any_shape",
)
ALL = ("values_no_margin",) + MARGIN

FAULTS = [
    fault(
        "log-of-sigmoid",
        "log(sigmoid(x)) instead of logsigmoid(x): sigmoid underflows to 0 for large negative "
        "gaps, so the loss becomes inf",
        fix="Use F.logsigmoid(x) (or -F.softplus(-x)): it stays finite and exact for large gaps.",
        explains=("stable",),
        site="logsigmoid",
    ),
    fault(
        "margin-added",
        "margin with the wrong sign: adding it makes the pair easier, but the chosen reward must "
        "beat the rejected one by the margin",
        fix="Subtract the margin: -logsigmoid(chosen - rejected - margin).",
        explains=MARGIN,
        site="margin",
    ),
    fault(
        "margin-ignored",
        "margin ignored: the margin argument is never subtracted from the gap",
        fix="Subtract the margin from the gap when it is given: chosen - rejected - margin.",
        explains=MARGIN + ("shape_errors",),
        site="margin",
    ),
    fault(
        "swapped",
        "chosen and rejected swapped: the loss rewards preferring the rejected answer",
        fix="The gap is chosen_rewards - rejected_rewards.",
        explains=ALL,
        site="gap",
    ),
    fault(
        "sum-not-mean",
        "sum instead of mean over the pairs",
        fix="Average over the pairs with .mean().",
        explains=ALL,
        site="reduce",
    ),
    fault(
        "divide-by-len",
        "dividing the sum by len(x), the first dimension only, instead of averaging over every element",
        fix="Use .mean() over every element (len() counts only the first dimension).",
        explains=("any_shape",),
        site="reduce",
    ),
    fault(
        "no-shape-check",
        "no shape check: [B, 1] rewards against [B] silently broadcast into a [B, B] matrix of pairs",
        fix="Raise ValueError when rejected_rewards (or a non-scalar tensor margin) differs in shape from "
        "chosen_rewards.",
        explains=("shape_errors",),
        site="shape",
        signature="no-value-error",
    ),
    inplace_edit_fault("rejected_rewards"),
    wrong_dtype_fault(("dtype_device", "worked_values")),
    fault(
        "missing-minus",
        "missing minus sign: the loss is -logsigmoid(chosen - rejected), the negative log-likelihood",
        fix="Return mean(-logsigmoid(chosen - rejected - margin)).",
        explains=(
            "values_no_margin",
            "values_float_margin",
            "values_tensor_margin",
            "worked_values",
            "stable",
            "gradient",
            "dtype_device",
            "any_shape",
        ),
        site="sign",
    ),
    fault(
        "scalar-margin-rejected",
        "a 0-dim tensor margin rejected: a scalar margin is allowed besides one of the rewards' shape",
        fix="Accept a 0-dim tensor margin (subtract it from every gap); only other shapes raise ValueError.",
        explains=("values_tensor_margin", "values_float_margin", "gradient"),
        site="margin-scalar",
    ),
]

MUTANTS = fault_mutants(faulty_pairwise_loss, FAULTS)
