"""Exercise masked-actor-loss: the PPO clipped loss over padded responses."""

import torch


def compute_masked_actor_loss(log_probs_new, log_probs_old, advantages, action_mask=None, clip_range=0.2,
                              loss_agg_mode="seq-mean-token-mean"):
    if loss_agg_mode not in ("seq-mean-token-mean", "token-mean"):
        raise ValueError(f"loss_agg_mode: unknown mode {loss_agg_mode!r}")
    ref_shape = log_probs_new.shape
    for name, t in (("log_probs_old", log_probs_old), ("advantages", advantages)):
        if t.shape != ref_shape:
            raise ValueError(f"{name} must be shaped {tuple(ref_shape)}")
    if action_mask is not None and action_mask.shape != ref_shape:
        raise ValueError(f"action_mask must be shaped {tuple(ref_shape)}")

    B, T = ref_shape
    if action_mask is None:
        valid = torch.ones(B, T, dtype=torch.bool, device=log_probs_new.device)
    else:
        valid = action_mask.to(torch.bool)
    # only the valid tokens are ever gathered, so padding never enters exp
    new = log_probs_new[valid]
    old = log_probs_old[valid]
    adv = advantages[valid]
    ratio = torch.exp(new - old)
    per_token = -torch.min(ratio * adv, torch.clamp(ratio, 1 - clip_range, 1 + clip_range) * adv)

    if loss_agg_mode == "token-mean":
        if per_token.numel() == 0:
            return (log_probs_new * 0).sum()  # 0, still connected to log_probs_new
        return per_token.mean()
    row_ids = torch.arange(B, device=valid.device).unsqueeze(1).expand(B, T)[valid]
    sums = torch.zeros(B, dtype=per_token.dtype, device=per_token.device).index_add(0, row_ids, per_token)
    counts = torch.full((B,), T, device=valid.device)
    return (sums / counts).mean()


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
