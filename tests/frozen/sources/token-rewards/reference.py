"""Hidden reference solution for `token-rewards`. Never sent to the jail."""

import torch


def compute_token_rewards(scores, log_probs_old, ref_log_probs, mask=None, kl_coef=0.1):
    expected = tuple(log_probs_old.shape)
    for name, t in (("ref_log_probs", ref_log_probs), ("mask", mask)):
        if t is not None and tuple(t.shape) != expected:
            raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {expected} (the shape of log_probs_old)")
    if len(expected) != 2:
        raise ValueError(f"log_probs_old must be [B, T], got shape {expected}")
    if tuple(scores.shape) != expected[:1]:
        raise ValueError(f"scores has shape {tuple(scores.shape)}, expected {expected[:1]} (one score per row)")
    with torch.no_grad():
        valid = torch.ones(expected, dtype=torch.bool, device=log_probs_old.device) if mask is None else mask != 0
        kl = torch.where(valid, log_probs_old - ref_log_probs, 0.0)
        rewards = -kl_coef * kl
        # Index of the last valid token per row (-1 for a row without one).
        positions = torch.arange(expected[1], device=log_probs_old.device).expand(expected)
        last = torch.where(valid, positions, -1).max(dim=-1).values
        at_last = (positions == last.unsqueeze(-1)) & valid
        rewards = rewards + torch.where(at_last, scores.unsqueeze(-1).to(rewards.dtype), 0.0)
    return rewards
