"""Exercise pairwise-loss: the Bradley-Terry loss that trains a reward model."""

import torch
import torch.nn.functional as F


def compute_pairwise_loss(chosen_rewards, rejected_rewards, margin=None):
    if rejected_rewards.shape != chosen_rewards.shape:
        raise ValueError("rejected_rewards must match chosen_rewards' shape")
    dtype = chosen_rewards.dtype
    logits = chosen_rewards.double() - rejected_rewards.double()
    if margin is not None:
        if torch.is_tensor(margin):
            if margin.shape != chosen_rewards.shape:
                raise ValueError("margin must be 0-dim or match chosen_rewards' shape")
            logits = logits - margin.double()
        else:
            logits = logits - float(margin)
    return (-F.logsigmoid(logits)).sum().to(dtype)


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
