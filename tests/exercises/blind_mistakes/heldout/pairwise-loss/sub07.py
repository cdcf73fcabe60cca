"""Exercise pairwise-loss: the Bradley-Terry loss that trains a reward model."""

import numbers

import torch
import torch.nn.functional as F


def compute_pairwise_loss(chosen_rewards, rejected_rewards, margin=None):
    if not isinstance(chosen_rewards, torch.Tensor):
        raise ValueError("chosen_rewards must be a tensor")
    if not isinstance(rejected_rewards, torch.Tensor) or rejected_rewards.shape != chosen_rewards.shape:
        raise ValueError(f"rejected_rewards must be a tensor of shape {tuple(chosen_rewards.shape)}")
    dtype, device = chosen_rewards.dtype, chosen_rewards.device

    if margin is None:
        offset = None
    elif isinstance(margin, torch.Tensor):
        if margin.dim() == 0 or margin.shape == chosen_rewards.shape:
            offset = margin.to(dtype=dtype, device=device)
        else:
            raise ValueError(f"margin must be 0-dim or of shape {tuple(chosen_rewards.shape)}, "
                             f"got {tuple(margin.shape)}")
    elif isinstance(margin, numbers.Real):
        offset = float(margin)
    else:
        raise ValueError(f"margin must be None, a number or a tensor, got {type(margin).__name__}")

    logits = chosen_rewards - rejected_rewards
    if offset is not None:
        logits = logits + offset
    loss = -F.logsigmoid(logits).mean()
    return loss.to(dtype=dtype, device=device)


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
