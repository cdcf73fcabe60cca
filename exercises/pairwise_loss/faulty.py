"""The `pairwise-loss` reference with a switch per catalogued mistake (see exercises/mistakes.py).

``faults=()`` is the reference; each switch is one misconception of mutants.py. Self-contained
(torch only): a mutant's submitted file is this module plus a wrapper.
"""

import torch
import torch.nn.functional as F


def faulty_pairwise_loss(chosen_rewards, rejected_rewards, margin=None, *, faults=frozenset()):
    if "inplace-edit" in faults:  # the values come from a copy; the caller's tensor is edited
        rejected_rewards, edited = rejected_rewards.clone(), rejected_rewards
        edited.data.add_(1)
    if "no-shape-check" not in faults:
        if rejected_rewards.shape != chosen_rewards.shape:
            raise ValueError(
                f"rejected_rewards has shape {tuple(rejected_rewards.shape)}, expected {tuple(chosen_rewards.shape)}"
            )
        if isinstance(margin, torch.Tensor) and margin.dim() == 0 and "scalar-margin-rejected" in faults:
            raise ValueError("margin must have the rewards' shape")
        if isinstance(margin, torch.Tensor) and margin.dim() != 0 and margin.shape != chosen_rewards.shape:
            raise ValueError(f"margin has shape {tuple(margin.shape)}, expected {tuple(chosen_rewards.shape)}")
    if "swapped" in faults:
        logits = rejected_rewards - chosen_rewards
    else:
        logits = chosen_rewards - rejected_rewards
    if margin is not None and "margin-ignored" not in faults:
        if isinstance(margin, torch.Tensor):
            margin = margin.to(dtype=logits.dtype)
        logits = logits + margin if "margin-added" in faults else logits - margin
    per_pair = -torch.log(torch.sigmoid(logits)) if "log-of-sigmoid" in faults else -F.logsigmoid(logits)
    if "missing-minus" in faults:
        per_pair = -per_pair
    if "sum-not-mean" in faults:
        return _dtype_fault(per_pair.sum(), faults)
    if "divide-by-len" in faults:
        return _dtype_fault(per_pair.sum() / len(chosen_rewards), faults)
    return _dtype_fault(per_pair.mean(), faults)


def _dtype_fault(out, faults):
    """The "wrong-dtype" switch: every result cast to float32, whatever the inputs' dtype."""
    if "wrong-dtype" not in faults:
        return out
    return tuple(t.float() for t in out) if isinstance(out, tuple) else out.float()
