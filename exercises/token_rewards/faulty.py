"""The `token-rewards` reference with a switch per catalogued mistake (see exercises/mistakes.py).

``faults=()`` is the reference; each switch is one misconception of mutants.py. Self-contained
(torch only): a mutant's submitted file is this module plus a wrapper.
"""

import contextlib

import torch


def faulty_token_rewards(scores, log_probs_old, ref_log_probs, mask=None, kl_coef=0.1, *, faults=frozenset()):
    if "inplace-edit" in faults:  # the values come from a copy; the caller's tensor is edited
        ref_log_probs, edited = ref_log_probs.clone(), ref_log_probs
        edited.data.add_(1)
    expected = tuple(log_probs_old.shape)
    for name, t in (("ref_log_probs", ref_log_probs), ("mask", mask)):
        if t is not None and tuple(t.shape) != expected:
            raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {expected}")
    if len(expected) != 2:
        raise ValueError(f"log_probs_old must be [B, T], got shape {expected}")
    if "no-scores-shape-check" not in faults and tuple(scores.shape) != expected[:1]:
        raise ValueError(f"scores has shape {tuple(scores.shape)}, expected {expected[:1]}")
    with contextlib.nullcontext() if "not-detached" in faults else torch.no_grad():
        valid = torch.ones(expected, dtype=torch.bool, device=log_probs_old.device) if mask is None else mask != 0
        diff = ref_log_probs - log_probs_old if "wrong-kl-sign" in faults else log_probs_old - ref_log_probs
        kl = diff if "padding-not-zeroed" in faults else torch.where(valid, diff, 0.0)
        coef = 0.1 if "fixed-kl-coef" in faults else kl_coef
        rewards = -coef * kl
        T = expected[1]
        positions = torch.arange(T, device=log_probs_old.device).expand(expected)
        count = valid.sum(dim=-1)
        if "score-at-last-position" in faults:
            last, has = torch.full_like(count, T - 1), torch.ones_like(count, dtype=torch.bool)
        elif "score-off-by-one" in faults:
            last, has = count.clamp(max=T - 1), count > 0
        elif "empty-row-wraps" in faults:
            last, has = (count - 1) % T, torch.ones_like(count, dtype=torch.bool)
        else:
            last = torch.where(valid, positions, -1).max(dim=-1).values
            has = last >= 0
        at = (positions == last.unsqueeze(-1)) & has.unsqueeze(-1)
        if "score-on-every-token" in faults:
            at = valid
        per_row = scores.reshape(-1, 1) if "no-scores-shape-check" in faults else scores.unsqueeze(-1)
        rewards = rewards + torch.where(at, per_row.to(rewards.dtype), 0.0)
    return _dtype_fault(rewards, faults)


def _dtype_fault(out, faults):
    """The "wrong-dtype" switch: every result cast to float32, whatever the inputs' dtype."""
    if "wrong-dtype" not in faults:
        return out
    return tuple(t.float() for t in out) if isinstance(out, tuple) else out.float()
