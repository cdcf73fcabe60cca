"""Exercise actor-loss: the PPO clipped surrogate loss."""

import torch


def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    if log_probs_old.shape != log_probs_new.shape:
        raise ValueError("log_probs_old: shape mismatch with log_probs_new")
    if advantages.shape != log_probs_new.shape:
        raise ValueError("advantages: shape mismatch with log_probs_new")

    ratio = torch.exp(log_probs_new - log_probs_old)
    # min(r * A, clip(r) * A) is A * min(r, 1 + eps) for A >= 0 and A * max(r, 1 - eps) for A < 0
    upper = torch.clamp(ratio, max=1.2)
    lower = torch.clamp(ratio, min=0.8)
    objective = torch.where(advantages >= 0, lower * advantages, upper * advantages)
    return -objective.mean().float()


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
