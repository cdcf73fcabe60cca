"""Exercise masked-actor-loss: the PPO clipped loss over padded responses."""

import torch


def compute_masked_actor_loss(log_probs_new, log_probs_old, advantages, action_mask=None, clip_range=0.2,
                              loss_agg_mode="seq-mean-token-mean"):
    if loss_agg_mode not in ("seq-mean-token-mean", "token-mean"):
        raise ValueError(f"invalid loss_agg_mode: {loss_agg_mode}")
    if log_probs_old.shape != log_probs_new.shape:
        raise ValueError(f"log_probs_old {tuple(log_probs_old.shape)} vs log_probs_new {tuple(log_probs_new.shape)}")
    if advantages.shape != log_probs_new.shape:
        raise ValueError(f"advantages {tuple(advantages.shape)} vs log_probs_new {tuple(log_probs_new.shape)}")
    if action_mask is not None and action_mask.shape != log_probs_new.shape:
        raise ValueError(f"action_mask {tuple(action_mask.shape)} vs log_probs_new {tuple(log_probs_new.shape)}")

    out_dtype = log_probs_new.dtype
    valid = action_mask.bool()
    zero = torch.zeros((), dtype=torch.float64, device=log_probs_new.device)
    new = torch.where(valid, log_probs_new.double(), zero)
    old = torch.where(valid, log_probs_old.double(), zero)
    adv = torch.where(valid, advantages.double(), zero)
    ratio = torch.exp(new - old)
    per_token = -torch.min(ratio * adv, torch.clamp(ratio, 1 - clip_range, 1 + clip_range) * adv)
    per_token = torch.where(valid, per_token, zero)
    counts = valid.sum(dim=-1).double()
    if loss_agg_mode == "token-mean":
        loss = per_token.sum() / counts.sum().clamp(min=1.0)
    else:
        loss = (per_token.sum(dim=-1) / counts.clamp(min=1.0)).mean()
    return loss.to(out_dtype)


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
