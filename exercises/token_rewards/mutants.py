"""Known mistakes of `token-rewards`: switches of the faulty reference (faulty.py).

``explains`` lists the checks each mistake can make fail; tests hold every single-fault mutant
to it over many seeds.
"""

from exercises.mistakes import fault, fault_mutants, inplace_edit_fault, wrong_dtype_fault
from exercises.token_rewards.faulty import faulty_token_rewards

KL = ("values_default", "values_custom_coef", "mask_kinds", "edge_rows", "dtype_device")
PLACEMENT = (
    "values_default",
    "values_custom_coef",
    "score_placement",
    "mask_kinds",
    "edge_rows",
    "dtype_device",
    "padding_zero",
)

FAULTS = [
    fault(
        "wrong-kl-sign",
        "wrong sign of the KL term: the reward is -kl_coef * (log_probs_old - ref_log_probs), a "
        "penalty for drifting from the reference, not a bonus",
        fix="reward = -kl_coef * (log_probs_old - ref_log_probs) on valid tokens.",
        explains=KL + ("score_placement",),
        site="kl-sign",
    ),
    fault(
        "score-at-last-position",
        "score added at the last position T - 1 instead of the last valid token of each row",
        fix="Add scores[b] at row b's last valid token, index mask[b].sum() - 1.",
        explains=PLACEMENT,
        site="placement",
    ),
    fault(
        "padding-not-zeroed",
        "the KL penalty is left on padded positions: padding must be 0",
        fix="Zero the reward at padded positions: torch.where(mask, reward, 0).",
        explains=(
            "values_default",
            "values_custom_coef",
            "padding_zero",
            "mask_kinds",
            "edge_rows",
            "dtype_device",
            "score_placement",
        ),
        site="padding",
    ),
    fault(
        "not-detached",
        "rewards not detached: they are fixed targets for PPO and must carry no gradient",
        fix="Compute the rewards under torch.no_grad() (or .detach() the result).",
        explains=("detached",),
        site="detach",
    ),
    fault(
        "score-off-by-one",
        "off by one: the score lands at index sum(mask) (the first padded position), not sum(mask) - 1",
        fix="The last valid token of a right-padded row is at index mask.sum() - 1.",
        explains=PLACEMENT,
        site="placement",
    ),
    fault(
        "empty-row-wraps",
        "a row with no valid token gets its score at index -1 (sum(mask) - 1 wraps around to "
        "T - 1); such a row must stay all 0",
        fix="Skip rows with no valid token: add the score only where mask.sum() > 0.",
        explains=("edge_rows", "padding_zero"),
        site="empty-row",
    ),
    fault(
        "score-on-every-token",
        "the score is added to every valid token instead of only the last one",
        fix="Add scores[b] once, at the last valid token of row b.",
        explains=PLACEMENT,
        site="placement",
    ),
    fault(
        "fixed-kl-coef",
        "kl_coef hard-coded to 0.1 instead of using the argument",
        fix="Use the kl_coef argument, not the constant 0.1.",
        explains=("values_custom_coef", "edge_rows", "mask_kinds", "score_placement", "padding_zero", "dtype_device"),
        site="coef",
    ),
    fault(
        "no-scores-shape-check",
        "no shape check on scores: a [B, 1] (or wrong-length) scores tensor is silently reshaped",
        fix="Raise ValueError unless scores has shape [B].",
        explains=("shape_errors",),
        site="shape",
        signature="no-value-error",
    ),
    inplace_edit_fault("ref_log_probs"),
    wrong_dtype_fault(),
]

MUTANTS = fault_mutants(faulty_token_rewards, FAULTS)
