"""Exercise masked-actor-loss: the PPO clipped loss over padded responses."""

import torch


def compute_masked_actor_loss(log_probs_new, log_probs_old, advantages, action_mask=None, clip_range=0.2,
                              loss_agg_mode="seq-mean-token-mean"):
    shape = log_probs_new.shape
    if log_probs_old.shape != shape:
        raise ValueError("log_probs_old: wrong shape")
    if advantages.shape != shape:
        raise ValueError("advantages: wrong shape")
    if action_mask is not None and action_mask.shape != shape:
        raise ValueError("action_mask: wrong shape")

    B = shape[0]
    row_sums, row_counts = [], []
    for b in range(B):
        if action_mask is None:
            keep = torch.ones(shape[1], dtype=torch.bool, device=log_probs_new.device)
        else:
            keep = action_mask[b] != 0
        new_b = log_probs_new[b][keep]
        old_b = log_probs_old[b][keep]
        adv_b = advantages[b][keep]
        ratio = torch.exp(old_b - new_b)
        per_token = -torch.min(ratio * adv_b, torch.clamp(ratio, 1 - clip_range, 1 + clip_range) * adv_b)
        row_sums.append(per_token.sum())
        row_counts.append(int(keep.sum()))

    if loss_agg_mode == "token-mean":
        total = sum(row_counts)
        acc = log_probs_new.new_zeros(()) if B == 0 else torch.stack(row_sums).sum()
        return acc / max(total, 1)
    acc = None
    for s, n in zip(row_sums, row_counts):
        term = s / max(n, 1)  # an empty row has s = 0 (still in the graph) and adds 0
        acc = term if acc is None else acc + term
    return acc / max(sum(1 for n in row_counts if n > 0), 1)


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
