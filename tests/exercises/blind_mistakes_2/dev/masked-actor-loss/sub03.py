"""Masked actor loss, one row at a time (easier to follow than the vectorised form)."""

import torch

MODES = ("seq-mean-token-mean", "token-mean")


def compute_masked_actor_loss(
    log_probs_new, log_probs_old, advantages, action_mask=None, clip_range=0.2, loss_agg_mode="seq-mean-token-mean"
):
    if loss_agg_mode not in MODES:
        raise ValueError(f"loss_agg_mode should be one of {MODES}, not {loss_agg_mode!r}")
    if log_probs_old.shape != log_probs_new.shape:
        raise ValueError("log_probs_old does not have the shape of log_probs_new")
    if advantages.shape != log_probs_new.shape:
        raise ValueError("advantages does not have the shape of log_probs_new")
    if action_mask is not None and action_mask.shape != log_probs_new.shape:
        raise ValueError("action_mask does not have the shape of log_probs_new")

    valid = torch.ones_like(log_probs_new, dtype=torch.bool) if action_mask is None else action_mask != 0

    diff = torch.where(valid, log_probs_new - log_probs_old, torch.zeros_like(log_probs_new))
    ratio = diff.exp()
    adv = torch.where(valid, advantages, torch.zeros_like(advantages))
    unclipped = ratio * adv
    clipped = ratio.clamp(1 - clip_range, 1 + clip_range) * adv
    per_token = -torch.min(unclipped, clipped)
    per_token = torch.where(valid, per_token, torch.zeros_like(per_token))

    if loss_agg_mode == "token-mean":
        n = int(valid.sum())
        return per_token.sum() / max(n, 1)

    rows = []
    for b in range(per_token.shape[0]):
        n_b = int(valid[b].sum())
        if n_b == 0:
            rows.append(per_token[b].sum())
        else:
            rows.append(per_token[b][valid[b]].sum() / per_token.shape[1])
    return torch.stack(rows).mean()


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
