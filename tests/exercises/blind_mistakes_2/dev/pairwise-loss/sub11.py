"""Bradley-Terry loss as log(1 + e^(-x)) = logaddexp(0, -x)."""

import torch


def compute_pairwise_loss(chosen_rewards, rejected_rewards, margin=None):
    """mean(-logsigmoid(chosen - rejected - margin)), stable for any gap."""
    if chosen_rewards.shape != rejected_rewards.shape:
        raise ValueError(
            f"shape mismatch: chosen_rewards {tuple(chosen_rewards.shape)}, rejected_rewards {tuple(rejected_rewards.shape)}"
        )
    if margin is None:
        margin = 0.0

    gap = rejected_rewards - chosen_rewards - margin
    return torch.logaddexp(torch.zeros_like(gap), -gap).sum() / len(gap)


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
