"""Exercise actor-loss: the PPO clipped surrogate loss."""

import torch


def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    for name, other in (("log_probs_old", log_probs_old), ("advantages", advantages)):
        if other.shape != log_probs_new.shape:
            raise ValueError(f"{name} must have the shape of log_probs_new {tuple(log_probs_new.shape)}, "
                             f"got {tuple(other.shape)}")
    old_log_probs = log_probs_old.detach()
    adv = advantages.detach()

    ratio = (log_probs_new - old_log_probs).exp()
    surr1 = ratio * adv
    surr2 = ratio.clamp(0.8, 1.2) * adv
    loss = -torch.min(surr1, surr2)
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
