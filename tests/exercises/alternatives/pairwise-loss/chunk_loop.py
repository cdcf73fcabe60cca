"""Style: Python loop over small chunks of the flattened pairs, softplus (threshold 40) per chunk, one running sum."""

import torch
import torch.nn.functional as F


def compute_pairwise_loss(chosen_rewards, rejected_rewards, margin=None):
    if rejected_rewards.shape != chosen_rewards.shape:
        raise ValueError("chosen_rewards and rejected_rewards must have the same shape")
    if isinstance(margin, torch.Tensor) and margin.dim() != 0 and margin.shape != chosen_rewards.shape:
        raise ValueError("margin must be a number, a 0-dim tensor or a tensor shaped like the rewards")
    gaps = chosen_rewards - rejected_rewards
    if margin is not None:
        gaps = gaps - margin
    flat = gaps.reshape(-1)
    total = torch.zeros((), dtype=flat.dtype, device=flat.device)
    for start in range(0, flat.numel(), 4):
        total = total + F.softplus(-flat[start:start + 4], threshold=40.0).sum()
    return total / flat.numel()


if __name__ == "__main__":
    import math

    loss = compute_pairwise_loss(torch.tensor([[1.0, 2.0, 0.0]]), torch.tensor([[1.0, 1.0, 200.0]]))
    assert torch.isclose(loss, torch.tensor((math.log(2.0) + math.log1p(math.exp(-1.0)) + 200.0) / 3)), loss
    assert torch.isclose(compute_pairwise_loss(torch.tensor([2.0]), torch.tensor([1.0]), margin=1.0),
                         torch.tensor(math.log(2.0)))
    print("self-tests passed")
