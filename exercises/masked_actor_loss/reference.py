"""Hidden reference solution for `masked-actor-loss`. Never sent to the jail."""

import torch

LOSS_AGG_MODES = ("seq-mean-token-mean", "token-mean")


def compute_masked_actor_loss(
    log_probs_new, log_probs_old, advantages, action_mask=None, clip_range=0.2, loss_agg_mode="seq-mean-token-mean"
):
    if loss_agg_mode not in LOSS_AGG_MODES:
        raise ValueError(f"loss_agg_mode must be one of {LOSS_AGG_MODES}, got {loss_agg_mode!r}")
    expected = tuple(log_probs_new.shape)
    for name, t in (("log_probs_old", log_probs_old), ("advantages", advantages), ("action_mask", action_mask)):
        if t is not None and tuple(t.shape) != expected:
            raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {expected} (the shape of log_probs_new)")
    if action_mask is None:
        valid = torch.ones(expected, dtype=torch.bool, device=log_probs_new.device)
    else:
        valid = action_mask != 0
    # Select, never multiply: padding may hold values whose exp overflows, and inf * 0 is NaN.
    log_ratio = torch.where(valid, log_probs_new - log_probs_old, 0.0)
    adv = torch.where(valid, advantages, 0.0)
    ratio = torch.exp(log_ratio)
    pg_loss1 = ratio * adv
    pg_loss2 = torch.clamp(ratio, 1.0 - clip_range, 1.0 + clip_range) * adv
    per_token = -torch.min(pg_loss1, pg_loss2)
    counts = valid.to(per_token.dtype)
    if loss_agg_mode == "token-mean":
        return per_token.sum() / counts.sum().clamp(min=1)
    per_row = per_token.sum(dim=-1) / counts.sum(dim=-1).clamp(min=1)
    return per_row.mean()
