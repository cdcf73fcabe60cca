"""PPO clipped surrogate (actor-loss exercise)."""

import torch


def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    """Clipped PPO policy loss, averaged over every element."""
    for name, other in (("log_probs_old", log_probs_old), ("advantages", advantages)):
        if other.shape != log_probs_new.shape:
            raise ValueError(f"{name} must have shape {tuple(log_probs_new.shape)}, got {tuple(other.shape)}")

    log_ratio = log_probs_new - log_probs_old.detach()
    ratio = log_ratio.exp()
    surr1 = -advantages * ratio
    surr2 = -advantages * ratio.clamp(1 - clip_range, 1 + clip_range)
    loss = torch.max(surr1, surr2)
    return loss.mean()


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
