"""Exercise actor-loss: the PPO clipped surrogate loss."""

import torch


def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    if tuple(log_probs_old.shape) != tuple(log_probs_new.shape):
        raise ValueError("log_probs_old must have the same shape as log_probs_new")
    if tuple(advantages.shape) != tuple(log_probs_new.shape):
        raise ValueError("advantages must have the same shape as log_probs_new")

    if log_probs_new.dim() < 2:
        rows_new = log_probs_new.reshape(1, -1)
        rows_old = log_probs_old.reshape(1, -1)
        rows_adv = advantages.reshape(1, -1)
    else:
        last = log_probs_new.shape[-1]
        rows_new = log_probs_new.reshape(-1, last)
        rows_old = log_probs_old.reshape(-1, last)
        rows_adv = advantages.reshape(-1, last)

    total = None
    for i in range(rows_new.shape[0]):
        ratio = torch.exp(rows_old[i].neg_().add_(rows_new[i]))
        surr1 = ratio * rows_adv[i]
        surr2 = torch.clamp(ratio, 1 - clip_range, 1 + clip_range) * rows_adv[i]
        row_sum = torch.minimum(surr1, surr2).sum()
        total = row_sum if total is None else total + row_sum
    n = log_probs_new.numel()
    if total is None:  # no rows at all
        return (log_probs_new.sum() * 0).reshape(())
    return -total


if __name__ == "__main__":
    import math

    # ratio 2 with A = +1 is clipped to 1.2, so the loss is -1.2
    loss = compute_actor_loss(torch.tensor([math.log(2.0)]), torch.tensor([0.0]), torch.tensor([1.0]))
    assert torch.isclose(loss, torch.tensor(-1.2)), loss
    # ratio 0.5 with A = -1 is clipped to 0.8: min(-0.5, -0.8) = -0.8, so the loss is 0.8
    loss = compute_actor_loss(torch.tensor([math.log(0.5)]), torch.tensor([0.0]), torch.tensor([-1.0]))
    assert torch.isclose(loss, torch.tensor(0.8)), loss
    assert loss.dim() == 0
    print("self-tests passed")
