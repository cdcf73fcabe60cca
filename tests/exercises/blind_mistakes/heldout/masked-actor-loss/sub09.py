"""Exercise masked-actor-loss: the PPO clipped loss over padded responses."""

import torch


def masked_mean(tensor, mask, dim=None):
    if dim is None:
        return (tensor * mask).sum() / mask.sum().clamp(min=1)
    return (tensor * mask).sum(dim=dim) / mask.sum(dim=dim).clamp(min=1)


def compute_masked_actor_loss(log_probs_new, log_probs_old, advantages, action_mask=None, clip_range=0.2,
                              loss_agg_mode="seq-mean-token-mean"):
    if loss_agg_mode not in ("seq-mean-token-mean", "token-mean"):
        raise ValueError(f"unknown loss_agg_mode {loss_agg_mode!r}")
    if log_probs_old.shape != log_probs_new.shape:
        raise ValueError("log_probs_old must match log_probs_new's shape")
    if advantages.shape != log_probs_new.shape:
        raise ValueError("advantages must match log_probs_new's shape")
    if action_mask is not None and action_mask.shape != log_probs_new.shape:
        raise ValueError("action_mask must match log_probs_new's shape")

    dtype = log_probs_new.dtype
    if action_mask is None:
        mask = torch.ones_like(log_probs_new, dtype=dtype)
    else:
        mask = action_mask.to(dtype)

    # zero every input at padding before exp: finite * 0 is 0, and exp(0) = 1 stays finite
    log_ratio = log_probs_new - log_probs_old
    ratio = log_ratio.exp()
    adv = advantages * mask
    surr1 = ratio * adv
    surr2 = ratio.clamp(1 - clip_range, 1 + clip_range) * adv
    loss = -torch.max(surr1, surr2)
    if loss_agg_mode == "token-mean":
        return masked_mean(loss, mask)
    per_row = masked_mean(loss, mask, dim=-1)
    return per_row.sum() / (mask.sum(dim=-1) > 0).sum().clamp(min=1)


if __name__ == "__main__":
    import math

    # Row 0: two valid tokens with ratio 1 and A = +1, -2: losses -1 and +2 (row mean 0.5).
    # Row 1: one valid token with ratio 2 and A = +1: clipped to 1.2, loss -1.2.
    # Padded positions hold garbage (5.0) that must be ignored.
    new = torch.tensor([[0.0, 0.0, 5.0], [math.log(2.0), 5.0, 5.0]])
    old = torch.tensor([[0.0, 0.0, 5.0], [0.0, 5.0, -5.0]])
    adv = torch.tensor([[1.0, -2.0, 5.0], [1.0, 5.0, 5.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    seq = compute_masked_actor_loss(new, old, adv, mask)
    assert torch.isclose(seq, torch.tensor(-0.35)), seq  # (0.5 + -1.2) / 2
    tok = compute_masked_actor_loss(new, old, adv, mask, loss_agg_mode="token-mean")
    assert torch.isclose(tok, torch.tensor(-0.2 / 3)), tok  # (-1 + 2 - 1.2) / 3
    assert seq.dim() == 0
    # A row with no valid token contributes 0 and counts in the batch mean: (0.5 + 0) / 2.
    empty = compute_masked_actor_loss(new, old, adv, torch.tensor([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]))
    assert torch.isclose(empty, torch.tensor(0.25)), empty
    try:
        compute_masked_actor_loss(new, old, adv, mask, loss_agg_mode="token-sum")
    except ValueError:
        pass
    else:
        raise AssertionError("an unknown loss_agg_mode must raise ValueError")
    print("self-tests passed")
