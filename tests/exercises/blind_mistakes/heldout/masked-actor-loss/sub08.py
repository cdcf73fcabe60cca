"""Exercise masked-actor-loss: the PPO clipped loss over padded responses."""

import torch

_MODES = ("seq-mean-token-mean", "token-mean")


def _agg_loss(loss_mat, valid, loss_agg_mode):
    maskf = valid.to(loss_mat.dtype)
    if loss_agg_mode == "token-mean":
        n_tokens = valid.sum().clamp(min=1)
        return (loss_mat * maskf).sum() / n_tokens
    seq_losses = (loss_mat * maskf).sum(dim=-1) / valid.sum(dim=-1)
    return seq_losses.mean()


def compute_masked_actor_loss(log_probs_new, log_probs_old, advantages, action_mask=None, clip_range=0.2,
                              loss_agg_mode="seq-mean-token-mean"):
    for name, t in (("log_probs_old", log_probs_old), ("advantages", advantages), ("action_mask", action_mask)):
        if t is not None and t.shape != log_probs_new.shape:
            raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {tuple(log_probs_new.shape)}")
    if action_mask is None:
        valid = torch.ones_like(log_probs_new, dtype=torch.bool)
    else:
        valid = action_mask.bool()

    negative_approx_kl = torch.where(valid, log_probs_new - log_probs_old, torch.zeros_like(log_probs_new))
    ratio = torch.exp(negative_approx_kl)
    adv = torch.where(valid, advantages, torch.zeros_like(advantages))
    pg_losses1 = -adv * ratio
    pg_losses2 = -adv * torch.clamp(ratio, 1.0 - clip_range, 1.0 + clip_range)
    pg_losses = torch.maximum(pg_losses1, pg_losses2)
    return _agg_loss(pg_losses, valid, loss_agg_mode)


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
