"""The `dpo-loss` reference with a switch per catalogued mistake (see exercises/mistakes.py).

``faults=()`` is the reference; each switch is one misconception of mutants.py. Self-contained
(torch only): a mutant's submitted file is this module plus a wrapper.
"""

import torch
import torch.nn.functional as F


def faulty_dpo_loss(
    policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps, beta=0.1, *, faults=frozenset()
):
    if "inplace-edit" in faults:  # the values come from a copy; the caller's tensor is edited
        ref_chosen_logps, edited = ref_chosen_logps.clone(), ref_chosen_logps
        edited.data.add_(1)
    shape = policy_chosen_logps.shape
    if "no-shape-check" not in faults:
        for name, t in (
            ("policy_rejected_logps", policy_rejected_logps),
            ("ref_chosen_logps", ref_chosen_logps),
            ("ref_rejected_logps", ref_rejected_logps),
        ):
            if t.shape != shape:
                raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {tuple(shape)}")
    if "reference-ignored" in faults:
        chosen_logratios, rejected_logratios = policy_chosen_logps, policy_rejected_logps
    elif "ref-policy-swapped" in faults:
        chosen_logratios = ref_chosen_logps - policy_chosen_logps
        rejected_logratios = ref_rejected_logps - policy_rejected_logps
    else:
        chosen_logratios = policy_chosen_logps - ref_chosen_logps
        rejected_logratios = policy_rejected_logps - ref_rejected_logps
    chosen_rewards = beta * chosen_logratios
    rejected_rewards = beta * rejected_logratios
    if "beta-missing" in faults:
        gap = chosen_logratios - rejected_logratios
    elif "reference-added" in faults:
        gap = beta * ((policy_chosen_logps - policy_rejected_logps) + (ref_chosen_logps - ref_rejected_logps))
    else:
        gap = chosen_rewards - rejected_rewards
    if "loss-from-detached" in faults:
        gap = gap.detach()
    if "chosen-rejected-swapped" in faults:
        gap = -gap
    per_pair = -torch.log(torch.sigmoid(gap)) if "log-of-sigmoid" in faults else -F.logsigmoid(gap)
    if "missing-minus" in faults:
        per_pair = -per_pair
    loss = per_pair.sum() if "sum-not-mean" in faults else per_pair.mean()
    if "rewards-without-beta" in faults:
        chosen_rewards, rejected_rewards = chosen_logratios, rejected_logratios
    if "rewards-swapped" in faults:
        chosen_rewards, rejected_rewards = rejected_rewards, chosen_rewards
    if "rewards-not-detached" in faults:
        return _dtype_fault((loss, chosen_rewards, rejected_rewards), faults)
    return _dtype_fault((loss, chosen_rewards.detach(), rejected_rewards.detach()), faults)


def _dtype_fault(out, faults):
    """The "wrong-dtype" switch: every result cast to float32, whatever the inputs' dtype."""
    if "wrong-dtype" not in faults:
        return out
    return tuple(t.float() for t in out) if isinstance(out, tuple) else out.float()
