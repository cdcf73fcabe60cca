"""Known mistakes of `kl-penalty`: switches of the faulty reference (faulty.py).

``explains`` lists the checks each mistake can make fail; tests hold every single-fault mutant
to it over many seeds.
"""

from exercises.kl_penalty.faulty import faulty_kl_penalty
from exercises.mistakes import fault, fault_mutants, inplace_edit_fault, wrong_dtype_fault

COMMON = ("large_gaps", "gradient", "any_shape", "dtype_device")

FAULTS = [
    fault(
        "k1-wrong-sign",
        "k1 with the wrong sign: the log-ratio is log_probs - ref_log_probs (policy over reference)",
        fix="k1 = log_probs - ref_log_probs.",
        explains=("values_k1",) + COMMON,
        site="k1",
    ),
    fault(
        "k2-missing-half",
        "k2 without the factor 0.5: k2 = 0.5 * (log-ratio)^2",
        fix="k2 = 0.5 * (log_probs - ref_log_probs) ** 2.",
        explains=("values_k2",) + COMMON,
        site="k2",
    ),
    fault(
        "k3-inverted-ratio",
        "k3 with the ratio inverted: k3 uses exp(ref_log_probs - log_probs), the reference "
        "over the policy; exp(log_probs - ref_log_probs) estimates the reverse KL",
        fix="k3 = exp(r) - r - 1 with r = ref_log_probs - log_probs.",
        explains=("values_k3",) + COMMON,
        site="k3-ratio",
    ),
    fault(
        "k3-missing-one",
        "k3 without the - 1: exp(d) - d - 1 is 0 when the policies agree; exp(d) - d is not",
        fix="Subtract 1: k3 = exp(r) - r - 1 (best as torch.expm1(r) - r).",
        explains=("values_k3",) + COMMON,
        site="k3-one",
    ),
    fault(
        "via-probabilities",
        "computed from probabilities: exp(log_probs) underflows to 0 for log-probs near -200 "
        "(float32), so the ratio becomes 0 or inf; work with the difference of log-probs instead",
        fix="Work with the log-ratio log_probs - ref_log_probs; never exponentiate the log-probs themselves.",
        explains=("large_gaps", "values_k3", "gradient"),
        site="ratio",
    ),
    fault(
        "k3-clamped",
        "k3 clamped to [-10, 10] (as some libraries' low_var_kl does): the estimator asked for is unclamped",
        fix="Return k3 unclamped.",
        explains=("values_k3",) + COMMON,
        site="k3-clamp",
    ),
    fault(
        "unknown-kind-fallback",
        "an unknown kind silently falls back to k1 instead of raising ValueError",
        fix="Raise ValueError unless kind is 'k1', 'k2' or 'k3'.",
        explains=("bad_kind",),
        site="kind-check",
        signature="no-value-error",
    ),
    fault(
        "reduced-to-mean",
        "reduced to a mean: the estimators are per token (elementwise), shaped like the inputs",
        fix="Return the elementwise estimate, shaped like the inputs; reduce later, where it is used.",
        explains=("values_k1", "values_k2", "values_k3") + COMMON,
        site="reduce",
    ),
    fault(
        "no-shape-check",
        "no shape check: a [B, 1] or [T] ref_log_probs silently broadcasts against [B, T] log-probs",
        fix="Raise ValueError when ref_log_probs differs in shape from log_probs.",
        explains=("shape_errors",),
        site="shape",
        signature="no-value-error",
    ),
    fault(
        "k3-without-expm1",
        "k3 as exp(r) - r - 1: for nearly equal log-probs (|r| < 1e-4) it rounds to 0 in "
        "float32; torch.expm1(r) - r keeps it exact",
        fix="Compute k3 as torch.expm1(r) - r with r = ref_log_probs - log_probs.",
        explains=("large_gaps",),
        site="k3-form",
    ),
    inplace_edit_fault("ref_log_probs"),
    wrong_dtype_fault(),
    fault(
        "k1-detached",
        "k1 detached: the estimate carries no gradient to log_probs (a habit from using the KL as a reward)",
        fix="Return log_probs - ref_log_probs without .detach() or torch.no_grad().",
        explains=("gradient", "any_shape", "large_gaps"),
        site="k1-grad",
    ),
]

MUTANTS = fault_mutants(faulty_kl_penalty, FAULTS)
