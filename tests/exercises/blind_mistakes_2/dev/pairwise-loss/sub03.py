"""Reward-model loss (Bradley-Terry), via softplus: -log sigmoid(x) = softplus(-x)."""

import torch
import torch.nn.functional as F


def compute_pairwise_loss(chosen_rewards, rejected_rewards, margin=None):
    if chosen_rewards.shape != rejected_rewards.shape:
        raise ValueError("rejected_rewards must have the same shape as chosen_rewards")
    diff = chosen_rewards - rejected_rewards
    if margin is not None:
        diff = diff - margin
    return F.softplus(-diff).mean()


if __name__ == "__main__":
    import math

    # equal rewards: -log(sigmoid(0)) = log 2
    loss = compute_pairwise_loss(torch.tensor([1.0, -3.0]), torch.tensor([1.0, -3.0]))
    assert torch.isclose(loss, torch.tensor(math.log(2.0))), loss
    assert loss.dim() == 0
    # a gap of +1: -log(sigmoid(1)) = log(1 + e^-1) = 0.31326
    loss = compute_pairwise_loss(torch.tensor([2.0]), torch.tensor([1.0]))
    assert torch.isclose(loss, torch.tensor(math.log1p(math.exp(-1.0)))), loss
    # the same gap with margin 1.0 is back to log 2
    loss = compute_pairwise_loss(torch.tensor([2.0]), torch.tensor([1.0]), margin=1.0)
    assert torch.isclose(loss, torch.tensor(math.log(2.0))), loss
    # a gap of -200 costs 200, not inf
    loss = compute_pairwise_loss(torch.tensor([0.0]), torch.tensor([200.0]))
    assert torch.isclose(loss, torch.tensor(200.0)), loss
    print("self-tests passed")
