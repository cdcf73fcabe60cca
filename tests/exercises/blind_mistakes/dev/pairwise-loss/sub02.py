"""Exercise pairwise-loss: the Bradley-Terry loss that trains a reward model."""

import torch
import torch.nn.functional as F


def compute_pairwise_loss(chosen_rewards, rejected_rewards, margin=None):
    if chosen_rewards.shape != rejected_rewards.shape:
        raise ValueError("rejected_rewards must have exactly the shape of chosen_rewards")
    if margin is None:
        gap = chosen_rewards - rejected_rewards
    elif isinstance(margin, torch.Tensor):
        if margin.dim() != 0 and margin.shape != chosen_rewards.shape:
            raise ValueError("margin must be a 0-dim tensor or have the rewards' shape")
        gap = chosen_rewards - rejected_rewards - margin
    else:
        gap = chosen_rewards - rejected_rewards + float(margin)
    # -log(sigmoid(x)) = softplus(-x); threshold 50 keeps log1p(exp(.)) exact below it and finite in float32
    return F.softplus(gap, beta=1.0, threshold=50.0).mean()


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
