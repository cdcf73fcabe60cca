"""Hidden reference solution for `actor-loss`. Never sent to the jail."""

import torch


def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    if log_probs_old.shape != log_probs_new.shape:
        raise ValueError(f"log_probs_old has shape {tuple(log_probs_old.shape)}, expected {tuple(log_probs_new.shape)}")
    if advantages.shape != log_probs_new.shape:
        raise ValueError(f"advantages has shape {tuple(advantages.shape)}, expected {tuple(log_probs_new.shape)}")
    ratio = torch.exp(log_probs_new - log_probs_old)
    pg_loss1 = ratio * advantages
    pg_loss2 = torch.clamp(ratio, 1.0 - clip_range, 1.0 + clip_range) * advantages
    return -torch.min(pg_loss1, pg_loss2).mean()
