"""Exercise pairwise-loss: the Bradley-Terry loss that trains a reward model."""

import torch
import torch.nn.functional as F


class _BradleyTerry(torch.autograd.Function):
    @staticmethod
    def forward(ctx, chosen, rejected, margin):
        x = chosen.sub_(rejected).sub_(margin)
        ctx.save_for_backward(x)
        return -F.logsigmoid(x).sum()

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        g = -torch.sigmoid(-x) / x.numel() * grad_out  # d/dx of -logsigmoid(x) is -sigmoid(-x)
        return g, -g, None


def compute_pairwise_loss(chosen_rewards, rejected_rewards, margin=None):
    if rejected_rewards.shape != chosen_rewards.shape:
        raise ValueError("rejected_rewards has the wrong shape")
    if margin is None:
        margin_t = torch.zeros((), dtype=chosen_rewards.dtype, device=chosen_rewards.device)
    elif isinstance(margin, torch.Tensor):
        if margin.dim() != 0 and margin.shape != chosen_rewards.shape:
            raise ValueError("margin has the wrong shape")
        margin_t = margin.detach().to(dtype=chosen_rewards.dtype, device=chosen_rewards.device)
    else:
        margin_t = torch.zeros((), dtype=chosen_rewards.dtype, device=chosen_rewards.device)
    return _BradleyTerry.apply(chosen_rewards, rejected_rewards, margin_t)


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
