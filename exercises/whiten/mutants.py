"""Known mistakes of `whiten`: switches of the faulty reference (faulty.py).

``explains`` lists the checks each mistake can make fail; tests hold every single-fault mutant
to it over many seeds.
"""

from exercises.mistakes import fault, fault_mutants, inplace_edit_fault, wrong_dtype_fault
from exercises.whiten.faulty import faulty_whiten

VALUES = ("values_random", "values_no_shift", "unbiased", "any_shape", "near_constant", "custom_eps", "dtype_device")

FAULTS = [
    fault(
        "biased-variance",
        "biased variance: dividing by n instead of n - 1 (the contract asks for Bessel's correction)",
        fix="Divide the sum of squared deviations by n - 1 (unbiased variance).",
        explains=VALUES,
        site="dof",
    ),
    fault(
        "stats-over-padding",
        "statistics over padding: the mean and variance include the padded positions instead of the valid ones only",
        fix="Compute the mean and variance over the valid positions only (mask them).",
        explains=VALUES,
        site="stats-mask",
    ),
    fault(
        "count-all-elements",
        "masked sums divided by the total number of elements instead of the number of valid ones",
        fix="Divide the masked sums by the number of valid values, mask.sum().",
        explains=VALUES,
        site="count",
    ),
    fault(
        "mean-not-added-back",
        "shift_mean=False ignored: the mean must be added back after scaling when shift_mean is False",
        fix="When shift_mean is False, add the mean back after scaling.",
        explains=("values_no_shift", "unbiased", "any_shape", "near_constant", "custom_eps"),
        site="shift",
    ),
    fault(
        "eps-outside-sqrt",
        "eps outside the square root: dividing by (std + eps) instead of multiplying by rsqrt(var + eps)",
        fix="Scale by torch.rsqrt(var + eps): eps goes inside the square root.",
        explains=("near_constant", "custom_eps", "unbiased", "dtype_device"),
        site="eps",
    ),
    fault(
        "no-eps",
        "no eps at all: dividing by the bare standard deviation, so constant values give 0 / 0 = NaN",
        fix="Scale by torch.rsqrt(var + eps) so a zero variance stays finite.",
        explains=("near_constant", "custom_eps", "unbiased", "dtype_device"),
        site="eps",
    ),
    fault(
        "one-pass-variance",
        "one-pass variance E[x^2] - E[x]^2: catastrophic cancellation when the values are large and nearly equal",
        fix="Compute the variance from centered values: mean of (x - mean)^2 over the valid positions.",
        explains=("near_constant",),
        site="variance",
    ),
    fault(
        "no-count-check",
        "no check for fewer than two valid values: the unbiased variance divides by n - 1 = 0 and the result is NaN",
        fix="Raise ValueError when fewer than two values are valid.",
        explains=("too_few",),
        site="count-check",
        signature="no-value-error",
    ),
    fault(
        "no-shape-check",
        "no shape check: a mask of another shape silently broadcasts against values",
        fix="Raise ValueError when mask's shape differs from values'.",
        explains=("shape_errors",),
        site="shape",
        signature="no-value-error",
    ),
    inplace_edit_fault("values"),
    wrong_dtype_fault(("dtype_device", "unbiased", "near_constant", "custom_eps")),
    fault(
        "divide-by-variance",
        "dividing by the variance (var + eps) instead of the standard deviation: multiply by rsqrt(var + eps)",
        fix="Scale by torch.rsqrt(var + eps), the inverse standard deviation, not 1 / (var + eps).",
        explains=(
            "values_random",
            "values_no_shift",
            "unbiased",
            "any_shape",
            "near_constant",
            "custom_eps",
            "dtype_device",
        ),
        site="eps",
    ),
    fault(
        "fixed-eps",
        "eps hard-coded to 1e-8 instead of using the argument",
        fix="Use the eps argument inside the square root: rsqrt(var + eps).",
        explains=("custom_eps",),
        site="eps-value",
    ),
]

# Built last (issue 37), so the catalogue's earlier mistakes keep their order.
FAULTS += [
    fault(
        "constant-not-detected",
        "a zero spread not detected: when every valid value is equal, their float mean can be a rounding "
        "step off them (seven float32 0.1s), and that step times rsqrt(0 + eps) comes back instead of 0",
        fix="When every valid value is equal (max == min over the valid positions), return 0 there "
        "(the mean when shift_mean is False).",
        explains=("near_constant",),
        site="constant",
    ),
]

MUTANTS = fault_mutants(faulty_whiten, FAULTS)
