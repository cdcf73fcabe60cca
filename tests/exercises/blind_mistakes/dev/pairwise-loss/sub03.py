"""Exercise pairwise-loss: the Bradley-Terry loss that trains a reward model."""

import torch


def compute_pairwise_loss(chosen_rewards, rejected_rewards, margin=None):
    if rejected_rewards.shape != chosen_rewards.shape:
        raise ValueError(f"rejected_rewards shape {tuple(rejected_rewards.shape)} != "
                         f"chosen_rewards shape {tuple(chosen_rewards.shape)}")
    m = 0.0
    if margin is not None:
        m = margin
    x = chosen_rewards - rejected_rewards - m
    ax = x.abs()
    # the |x| term has subgradient 0 at x = 0, so d/dx of (|x| - x) / 2 is exactly -0.5 there
    per_pair = torch.clamp(-x, min=0) + torch.log1p(torch.exp(-ax))
    return per_pair.mean().float()


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
