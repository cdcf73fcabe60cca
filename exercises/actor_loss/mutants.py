"""Known mistakes of `actor-loss`: switches of the faulty reference (faulty.py), one per misconception.

``explains`` lists the checks each mistake can make fail; tests hold every single-fault mutant
to it over many seeds. The memory mutant is hand-written: right values, float64 copies.
"""

import torch

from exercises.actor_loss.faulty import faulty_actor_loss
from exercises.mistakes import detached_branch_faults, fault, fault_mutants, mutant, wrong_dtype_fault

VALUES = (
    "values_default",
    "values_custom_clip",
    "clipped_side",
    "unclipped_side",
    "gradient",
    "zero_grad_where_clipped",
    "dtype_device",
    "any_shape",
)
#: One-element point cases cannot tell a sum from a mean.
SUMMED = tuple(c for c in VALUES if c not in ("clipped_side", "unclipped_side"))

FAULTS = [
    fault(
        "max-for-min",
        "max instead of min: PPO takes the pessimistic (smaller) of the clipped and unclipped objectives",
        fix="Take torch.min(ratio * A, clamp(ratio) * A) per element, then negate the mean.",
        explains=VALUES,
        site="min",
    ),
    fault(
        "missing-minus",
        "missing minus sign: the loss is the negated objective, since optimisers minimise",
        fix="Return -mean(min(...)): the loss is the negative of the clipped objective.",
        explains=VALUES,
        site="sign",
    ),
    fault(
        "clip-advantage",
        "clipping the advantage instead of the probability ratio",
        fix="Clamp the ratio exp(new - old) to [1 - clip_range, 1 + clip_range], never the advantage.",
        explains=VALUES,
        site="clip",
    ),
    fault(
        "fixed-clip",
        "clip_range hard-coded to 0.2 instead of using the argument",
        fix="Use the clip_range argument in the clamp bounds, not the constant 0.2.",
        explains=("values_custom_clip", "clipped_side", "unclipped_side", "gradient", "any_shape"),
        site="clip-range",
    ),
    fault(
        "sum-not-mean",
        "sum instead of mean over the elements",
        fix="Average the per-element losses with .mean(), not .sum().",
        explains=SUMMED,
        site="reduce",
    ),
    fault(
        "detached-ratio",
        "detached ratio: computing the ratio without gradient, so the policy never learns",
        fix="Keep log_probs_new in the autograd graph: no .detach(), .item() or torch.no_grad() on the ratio.",
        explains=("gradient", "zero_grad_where_clipped", "any_shape"),
        site="ratio-grad",
    ),
    fault(
        "no-shape-check",
        "no shape check: a [B] advantage silently broadcasts against [B, T] log-probs",
        fix="Raise ValueError when log_probs_old or advantages differ in shape from log_probs_new.",
        explains=("shape_errors",),
        site="shape",
        signature="no-value-error",
    ),
    fault(
        "inplace-edit",
        "in-place edit of an input: advantages scaled in place, changing the caller's tensor",
        fix="Compute into new tensors (x = x - y), never sub_(), mul_() or += on an argument.",
        explains=("no_inplace",),
        site="inplace",
        signature="edits-inputs",
    ),
    fault(
        "ratio-without-exp",
        "ratio without exp: log-probs are subtracted but never exponentiated",
        fix="The ratio is torch.exp(log_probs_new - log_probs_old).",
        explains=VALUES,
        site="ratio",
    ),
    fault(
        "inverted-ratio",
        "inverted ratio: exp(old - new) instead of exp(new - old)",
        fix="The ratio is exp(log_probs_new - log_probs_old): new over old.",
        explains=VALUES,
        site="ratio",
    ),
    fault(
        "one-sided-clip",
        "one-sided clip: only the upper bound 1 + clip_range is applied",
        fix="Clamp the ratio on both sides: torch.clamp(ratio, 1 - clip_range, 1 + clip_range).",
        explains=tuple(c for c in VALUES if c != "unclipped_side"),
        site="clip",
    ),
    fault(
        "no-clip",
        "no clipping: the loss is the plain policy gradient -mean(ratio * A); the clipped term "
        "clamp(ratio, 1 - clip_range, 1 + clip_range) * A and the min are missing",
        fix="Take the minimum of ratio * A and clamp(ratio, 1 - clip_range, 1 + clip_range) * A per element, "
        "then negate the mean.",
        explains=tuple(c for c in VALUES if c != "unclipped_side"),
        site="clip",
    ),
    fault(
        "clipped-grad-leak",
        "gradient through the clipped term: its value is clamp(ratio) * A, but the "
        "gradient of ratio * A still flows where the clipped term is the minimum",
        fix="Use torch.clamp(ratio, 1 - clip_range, 1 + clip_range): clamp has zero gradient outside the range; "
        "do not rescale ratio by a detached factor.",
        explains=("gradient", "zero_grad_where_clipped", "any_shape"),
        site="clip",
    ),
    fault(
        "no-reduction",
        "result not reduced to a scalar: the per-element loss is returned",
        fix="Reduce the per-element losses to one 0-dim tensor with .mean().",
        explains=VALUES,
        site="reduce",
    ),
    wrong_dtype_fault(("dtype_device", "clipped_side", "unclipped_side")),
]

# The detached-branch family (issue 37), declared alike in every clipped objective. Built last,
# so the catalogue's earlier mistakes keep their order.
FAULTS += detached_branch_faults(
    pick="min",
    clipped="clamp(ratio) * A",
    unclipped="ratio * A",
    argument="ratio",
    explains=("gradient", "zero_grad_where_clipped", "any_shape"),
)

MUTANTS = fault_mutants(faulty_actor_loss, FAULTS)


@mutant(
    "computing in float64: right values, but float64 copies of large inputs go over the memory budget",
    memory=True,
    explains=("memory",),
    fix="Compute in the inputs' dtype; no .double() or float64 copies of the inputs.",
)
def float64_inside(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    if log_probs_old.shape != log_probs_new.shape or advantages.shape != log_probs_new.shape:
        raise ValueError("shapes differ")
    new, old, adv = log_probs_new.double(), log_probs_old.double(), advantages.double()
    ratio = torch.exp(new - old)
    clipped = torch.clamp(ratio, 1 - clip_range, 1 + clip_range)
    return (-torch.min(ratio * adv, clipped * adv).mean()).to(log_probs_new.dtype)
