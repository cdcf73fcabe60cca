"""Exercise actor-loss: the PPO clipped surrogate loss."""

import torch


class _ClippedSurrogate(torch.autograd.Function):
    @staticmethod
    def forward(ctx, log_probs_new, log_probs_old, advantages, clip_range):
        ratio = torch.exp(log_probs_new - log_probs_old)
        surr1 = ratio * advantages
        surr2 = torch.clamp(ratio, 1 - clip_range, 1 + clip_range) * advantages
        take_unclipped = surr1 <= surr2
        n = log_probs_new.numel()
        # d(-mean(min))/d new = -A * ratio / n where the unclipped term is the minimum, else 0
        ctx.save_for_backward(surr1)
        ctx.n = n
        return torch.minimum(surr1, surr2).sum() / n

    @staticmethod
    def backward(ctx, grad_output):
        (slope,) = ctx.saved_tensors
        return -grad_output * slope / ctx.n, None, None, None


def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    if log_probs_old.shape != log_probs_new.shape:
        raise ValueError("log_probs_old does not match log_probs_new's shape")
    return _ClippedSurrogate.apply(log_probs_new, log_probs_old.detach(), advantages.detach(), clip_range)


if __name__ == "__main__":
    import math

    # ratio 2 with A = +1 is clipped to 1.2, so the loss is -1.2
    loss = compute_actor_loss(torch.tensor([math.log(2.0)]), torch.tensor([0.0]), torch.tensor([1.0]))
    assert torch.isclose(loss, torch.tensor(-1.2)), loss
    # ratio 0.5 with A = -1 is clipped to 0.8: min(-0.5, -0.8) = -0.8, so the loss is 0.8
    loss = compute_actor_loss(torch.tensor([math.log(0.5)]), torch.tensor([0.0]), torch.tensor([-1.0]))
    assert torch.isclose(loss, torch.tensor(0.8)), loss
    assert loss.dim() == 0
    print("self-tests passed")
