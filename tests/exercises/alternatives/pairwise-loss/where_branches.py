"""Style: torch.where between the two stable branches of -log sigmoid(x), each fed only safe inputs."""

import torch


def compute_pairwise_loss(chosen_rewards, rejected_rewards, margin=None):
    if rejected_rewards.shape != chosen_rewards.shape:
        raise ValueError(f"rejected_rewards has shape {tuple(rejected_rewards.shape)}, "
                         f"expected {tuple(chosen_rewards.shape)}")
    x = chosen_rewards - rejected_rewards
    if isinstance(margin, torch.Tensor):
        if margin.dim() != 0 and margin.shape != x.shape:
            raise ValueError(f"margin has shape {tuple(margin.shape)}, expected () or {tuple(x.shape)}")
        x = x - margin
    elif margin is not None:
        x = x - margin
    positive = x > 0
    # x > 0: log(1 + e^-x); x <= 0: -x + log(1 + e^x). Each branch sees only inputs where it is
    # taken (0 elsewhere), so neither overflows nor sends a NaN back through the untaken side;
    # at x = 0 the second branch's slope is -1 + 1/2 = -0.5, the true one.
    pos = torch.where(positive, x, torch.zeros_like(x))
    neg = torch.where(positive, torch.zeros_like(x), x)
    loss = torch.where(positive, torch.log1p(torch.exp(-pos)), torch.log1p(torch.exp(neg)) - neg)
    return loss.mean()


if __name__ == "__main__":
    import math

    assert torch.isclose(compute_pairwise_loss(torch.tensor([1.0]), torch.tensor([1.0])), torch.tensor(math.log(2.0)))
    assert torch.isclose(compute_pairwise_loss(torch.tensor([0.0]), torch.tensor([200.0])), torch.tensor(200.0))
    gap = torch.zeros(2, requires_grad=True)
    compute_pairwise_loss(gap, torch.zeros(2)).backward()
    assert torch.allclose(gap.grad, torch.tensor([-0.25, -0.25])), gap.grad  # -0.5 per pair, / 2
    print("self-tests passed")
