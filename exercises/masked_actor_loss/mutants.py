"""Known mistakes of `masked-actor-loss`: switches of the faulty reference (faulty.py).

``explains`` lists the checks each mistake can make fail; tests hold every single-fault mutant
to it over many seeds.
"""

from exercises.masked_actor_loss.faulty import faulty_masked_actor_loss
from exercises.mistakes import detached_branch_faults, fault, fault_mutants, wrong_dtype_fault

SEQ_VALUES = ("values_seq", "values_custom_clip", "edge_rows", "large_padding", "gradient", "dtype_device")
TOK_VALUES = ("values_token", "values_custom_clip", "edge_rows", "large_padding", "gradient", "dtype_device")
ALL_VALUES = tuple(dict.fromkeys(SEQ_VALUES + TOK_VALUES))

FAULTS = [
    fault(
        "swapped-modes",
        "seq-mean-token-mean and token-mean swapped: seq-mean-token-mean averages each row "
        "first, then the rows; token-mean pools every valid token of the batch",
        fix="For seq-mean-token-mean take each row's masked mean, then the mean over rows; for token-mean "
        "divide the sum over all valid tokens by their count.",
        explains=ALL_VALUES,
        site="modes",
    ),
    fault(
        "ignores-mask",
        "the mask is ignored: padded positions are averaged in as if they were tokens",
        fix="Select the valid tokens with the mask (torch.where) and count only them.",
        explains=ALL_VALUES,
        site="mask",
    ),
    fault(
        "empty-row-nan",
        "a row with no valid token gives 0/0 = NaN: clamp each row's token count to at least 1",
        fix="Divide by counts.clamp(min=1) so an empty row (or batch) contributes 0, not NaN.",
        explains=("edge_rows",),
        site="count-clamp",
    ),
    fault(
        "empty-rows-excluded",
        "rows with no valid token dropped from the batch mean: they contribute 0 but still count in B",
        fix="Average the per-row losses over all B rows, the empty ones included (they add 0).",
        explains=("edge_rows",),
        site="batch-count",
    ),
    fault(
        "divide-by-length",
        "each row divided by T (the padded length) instead of its own number of valid tokens",
        fix="Divide each row's sum by its own number of valid tokens, mask.sum(-1).",
        explains=SEQ_VALUES,
        site="row-divisor",
    ),
    fault(
        "token-mean-over-all-positions",
        "token-mean divided by every position B * T, padding included, instead of the number of valid tokens",
        fix="For token-mean divide by the number of valid tokens, mask.sum(), not by B * T.",
        explains=TOK_VALUES,
        site="token-divisor",
    ),
    fault(
        "no-mode-validation",
        "an unknown loss_agg_mode silently falls back to a default instead of raising ValueError",
        fix="Raise ValueError unless loss_agg_mode is 'seq-mean-token-mean' or 'token-mean'.",
        explains=("bad_mode",),
        site="mode-check",
        signature="no-value-error",
    ),
    fault(
        "multiply-by-mask",
        "padding masked by multiplying after exp: a large value at a padded position "
        "overflows to inf, and inf * 0 = NaN (select with torch.where before exp instead)",
        fix="Mask before exp: torch.where(mask, new - old, 0.0), then exp; never multiply by the mask afterwards.",
        explains=("large_padding", "edge_rows"),
        site="mask",
    ),
    fault(
        "no-clip",
        "no clipping: the per-token loss is the plain policy gradient -ratio * A; the clipped term "
        "clamp(ratio, 1 - clip_range, 1 + clip_range) * A and the min are missing",
        fix="Take the minimum of ratio * A and clamp(ratio, 1 - clip_range, 1 + clip_range) * A per token, "
        "then negate it.",
        explains=ALL_VALUES,
        site="clip",
    ),
    fault(
        "fixed-clip",
        "clip_range hard-coded to 0.2 instead of using the argument",
        fix="Use the clip_range argument in the clamp bounds, not the constant 0.2.",
        explains=("values_custom_clip", "gradient"),
        site="clip-range",
    ),
    fault(
        "inverted-ratio",
        "inverted ratio: exp(old - new) instead of exp(new - old)",
        fix="The ratio is exp(log_probs_new - log_probs_old): new over old.",
        explains=ALL_VALUES,
        site="ratio",
    ),
    fault(
        "max-for-min",
        "max instead of min: PPO takes the pessimistic (smaller) of the clipped and unclipped objectives",
        fix="Take torch.min(ratio * A, clamp(ratio) * A) per token, then negate it.",
        explains=ALL_VALUES,
        site="min",
    ),
    fault(
        "missing-minus",
        "missing minus sign: the loss is the negated objective, since optimisers minimise",
        fix="Negate the clipped objective: the per-token loss is -min(ratio * A, clamp(ratio) * A).",
        explains=ALL_VALUES,
        site="sign",
    ),
    fault(
        "no-shape-check",
        "no shape check: a [B, 1] advantage (or mask) silently broadcasts against [B, T] log-probs",
        fix="Raise ValueError naming the argument when log_probs_old, advantages or action_mask differ in shape.",
        explains=("shape_errors",),
        site="shape",
        signature="no-value-error",
    ),
    wrong_dtype_fault(),
    fault(
        "empty-batch-nan",
        "token-mean of a batch with no valid token gives 0/0 = NaN: clamp the token count to at least 1",
        fix="Divide the token-mean's sum by mask.sum().clamp(min=1), so an empty batch returns 0.",
        explains=("edge_rows",),
        site="token-count-clamp",
    ),
]

# The detached-branch family (issue 37), declared alike in every clipped objective. Built last,
# so the catalogue's earlier mistakes keep their order.
FAULTS += detached_branch_faults(
    pick="min",
    clipped="clamp(ratio) * A",
    unclipped="ratio * A",
    argument="ratio",
    explains=("gradient", "edge_rows", "large_padding"),
)

MUTANTS = fault_mutants(faulty_masked_actor_loss, FAULTS)
