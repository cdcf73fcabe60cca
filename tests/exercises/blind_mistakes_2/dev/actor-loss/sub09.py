"""Actor loss for PPO.

For a positive advantage the objective is min(ratio, 1 + eps) * A, for a negative one
max(ratio, 1 - eps) * A, which is the same as the min of the clipped and unclipped terms.
"""

import torch


def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    if log_probs_old.shape != log_probs_new.shape:
        raise ValueError("log_probs_old and log_probs_new must have the same shape")
    if advantages.shape != log_probs_new.shape:
        raise ValueError("advantages and log_probs_new must have the same shape")

    advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    ratio = torch.exp(log_probs_new - log_probs_old)
    upper = torch.clamp(ratio, max=1 + clip_range)
    lower = torch.clamp(ratio, min=1 - clip_range)
    objective = torch.where(advantages >= 0, upper * advantages, lower * advantages)
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
