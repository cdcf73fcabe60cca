"""Exercise masked-actor-loss: the PPO clipped loss over padded responses."""

import torch


def compute_masked_actor_loss(log_probs_new, log_probs_old, advantages, action_mask=None, clip_range=0.2,
                              loss_agg_mode="seq-mean-token-mean"):
    modes = {"seq-mean-token-mean", "token-mean"}
    if loss_agg_mode not in modes:
        raise ValueError(f"loss_agg_mode={loss_agg_mode!r}; expected one of {sorted(modes)}")
    for name, t in (("log_probs_old", log_probs_old), ("advantages", advantages)):
        if t.shape != log_probs_new.shape:
            raise ValueError(f"{name} shape {tuple(t.shape)} differs from log_probs_new {tuple(log_probs_new.shape)}")
    if action_mask is not None and action_mask.shape != log_probs_new.shape:
        raise ValueError(f"action_mask shape {tuple(action_mask.shape)} differs from {tuple(log_probs_new.shape)}")

    pad = torch.zeros_like(log_probs_new, dtype=torch.bool) if action_mask is None else action_mask == 0
    log_ratio = (log_probs_new - log_probs_old).masked_fill(pad, 0.0)
    adv = advantages
    ratio = log_ratio.exp()
    per_token = -torch.min(ratio * adv, ratio.clamp(1 - clip_range, 1 + clip_range) * adv)

    counts = (~pad).sum(dim=1)  # int64
    if loss_agg_mode == "token-mean":
        return per_token.sum() / counts.sum().clamp(min=1)
    per_row = per_token.sum(dim=1) / counts.clamp(min=1)
    return per_row.mean()


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
