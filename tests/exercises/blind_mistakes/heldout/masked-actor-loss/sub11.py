"""Exercise masked-actor-loss: the PPO clipped loss over padded responses."""

import torch


def compute_masked_actor_loss(log_probs_new, log_probs_old, advantages, action_mask=None, clip_range=0.2,
                              loss_agg_mode="seq-mean-token-mean"):
    if loss_agg_mode not in ("seq-mean-token-mean", "token-mean"):
        raise ValueError("loss_agg_mode must be 'seq-mean-token-mean' or 'token-mean'")
    if log_probs_old.shape != log_probs_new.shape:
        raise ValueError("log_probs_old shape mismatch")
    if advantages.shape != log_probs_new.shape:
        raise ValueError("advantages shape mismatch")
    if action_mask is not None and action_mask.shape != log_probs_new.shape:
        raise ValueError("action_mask shape mismatch")

    valid = torch.ones_like(log_probs_new, dtype=torch.bool) if action_mask is None else action_mask.bool()
    m = valid.to(log_probs_new.dtype)
    zeros = torch.zeros_like(log_probs_new)
    ratio = torch.where(valid, log_probs_old - log_probs_new, zeros).exp()
    adv = torch.where(valid, advantages, zeros)
    per_token = torch.maximum(-ratio * adv, -ratio.clamp(1 - clip_range, 1 + clip_range) * adv)
    row_sums = torch.einsum("bt,bt->b", per_token, m)
    row_counts = torch.einsum("bt->b", m)
    if loss_agg_mode == "seq-mean-token-mean":
        return torch.einsum("b->", row_sums) / torch.einsum("b->", row_counts).clamp(min=1)
    return torch.einsum("b->", row_sums / row_counts.clamp(min=1)) / per_token.shape[0]


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
