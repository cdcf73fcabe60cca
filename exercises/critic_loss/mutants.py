"""Known mistakes of `critic-loss`: switches of the faulty reference (faulty.py).

``explains`` lists the checks each mistake can make fail; tests hold every single-fault mutant
to it over many seeds.
"""

from exercises.critic_loss.faulty import faulty_critic_loss
from exercises.mistakes import detached_branch_faults, fault, fault_mutants, inplace_edit_fault, wrong_dtype_fault

UNCLIPPED = ("values_unclipped", "edge_rows", "large_padding", "gradient", "dtype_device")
CLIPPED = ("values_clipped", "clip_zero", "gradient", "large_padding", "dtype_device", "edge_rows")
ALL = tuple(dict.fromkeys(UNCLIPPED + CLIPPED))

FAULTS = [
    fault(
        "min-for-max",
        "min instead of max in value clipping: the critic loss takes the pessimistic (larger) of "
        "the clipped and unclipped squared errors",
        fix="Take torch.max((v_clipped - R)^2, (values - R)^2) per token.",
        explains=CLIPPED,
        site="max",
    ),
    fault(
        "clip-around-values",
        "clipping around values instead of old_values: v_clipped = old_values + "
        "clamp(values - old_values, -clip_range, clip_range) keeps the NEW value within clip_range of the OLD one",
        fix="v_clipped = old_values + clamp(values - old_values, -clip_range, clip_range).",
        explains=CLIPPED,
        site="clip-centre",
    ),
    fault(
        "missing-half",
        "the 0.5 factor is missing: the value loss is half the mean squared error",
        fix="Multiply the aggregated squared error by 0.5.",
        explains=ALL,
        site="half",
    ),
    fault(
        "grad-to-targets",
        "gradient flows into old_values and returns: they are fixed targets and must be detached",
        fix="Use old_values.detach() and returns.detach(): only values gets a gradient.",
        explains=("no_grad_to_targets",),
        site="targets",
    ),
    fault(
        "ignores-mask",
        "the mask is ignored: padded positions are averaged in as if they were tokens",
        fix="Select the valid tokens with the mask (torch.where) and divide each row by its own count.",
        explains=ALL,
        site="mask",
    ),
    fault(
        "empty-row-nan",
        "a row with no valid token gives 0/0 = NaN: clamp each row's token count to at least 1",
        fix="Divide by mask.sum(-1).clamp(min=1) so an empty row contributes 0, not NaN.",
        explains=("edge_rows",),
        site="count",
    ),
    fault(
        "token-mean",
        "token-mean instead of the masked mean per row then mean over the batch: pooling all valid "
        "tokens weighs long responses more",
        fix="Take each row's masked mean first, then the mean over the batch.",
        explains=ALL,
        site="aggregation",
    ),
    fault(
        "truthy-clip",
        "`if clip_range:` treats clip_range=0.0 as no clipping: test `clip_range is not None`",
        fix="Test `clip_range is not None`: 0.0 is a clip range.",
        explains=("clip_zero", "gradient"),
        site="clip-test",
    ),
    fault(
        "multiply-by-mask",
        "padding masked by multiplying after squaring: a large value at a padded position "
        "overflows to inf, and inf * 0 = NaN (select with torch.where before squaring instead)",
        fix="Mask before squaring: torch.where(mask, values, 0) (and the targets), never multiply afterwards.",
        explains=("large_padding",),
        site="mask",
    ),
    fault(
        "no-shape-check",
        "no shape check: a [B, 1] return (or mask) silently broadcasts against [B, T] values",
        fix="Raise ValueError naming the argument when old_values, returns or mask differ in shape from values.",
        explains=("shape_errors",),
        site="shape",
        signature="no-value-error",
    ),
    inplace_edit_fault("returns"),
    wrong_dtype_fault(),
    fault(
        "fixed-clip",
        "clip_range hard-coded to 0.2 instead of using the argument",
        fix="Use the clip_range argument in the clamp bounds, not the constant 0.2.",
        explains=("values_clipped", "clip_zero", "gradient"),
        site="clip-range",
    ),
    fault(
        "clip-around-returns",
        "clipping around the returns instead of old_values: v_clipped = returns + "
        "clamp(values - returns, -clip_range, clip_range)",
        fix="Clip the new values around the old ones: old_values + clamp(values - old_values, -clip_range, "
        "clip_range).",
        explains=("values_clipped", "clip_zero", "gradient", "edge_rows", "large_padding", "dtype_device"),
        site="clip-center",
    ),
]

# The detached-branch family (issue 37), declared alike in every clipped objective. Built last,
# so the catalogue's earlier mistakes keep their order.
FAULTS += detached_branch_faults(
    pick="max",
    clipped="(v_clipped - R)^2",
    unclipped="(values - R)^2",
    argument="values",
    explains=("gradient", "edge_rows", "large_padding"),
)
# The same family with the clipped value written with tensor bounds, as verl's clip_by_value
# does: exactly values inside the range, so the ties split the gradient where the form above
# rounds them to one branch.
FAULTS += detached_branch_faults(
    pick="max",
    clipped="(clamp(values, old_values - c, old_values + c) - R)^2",
    unclipped="(values - R)^2",
    argument="values",
    explains=("gradient", "edge_rows", "large_padding"),
    form="bounds",
    form_note="values clipped with tensor bounds",
)

MUTANTS = fault_mutants(faulty_critic_loss, FAULTS)
