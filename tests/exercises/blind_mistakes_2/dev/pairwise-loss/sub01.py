"""Pairwise loss with a hand-written stable log(1 + exp(-x)), one branch per sign of x."""

import torch


def compute_pairwise_loss(chosen_rewards, rejected_rewards, margin=None):
    if rejected_rewards.shape != chosen_rewards.shape:
        raise ValueError(f"rejected_rewards {tuple(rejected_rewards.shape)} != chosen_rewards {tuple(chosen_rewards.shape)}")
    x = chosen_rewards - rejected_rewards
    if margin is not None:
        if isinstance(margin, torch.Tensor) and margin.dim() > 0 and margin.shape != x.shape:
            raise ValueError(f"margin {tuple(margin.shape)} must be 0-dim or {tuple(x.shape)}")
        x = x - margin

    loss = torch.clamp(-x, min=0) + torch.log1p(torch.exp(-torch.abs(x)))
    return loss.mean()


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
