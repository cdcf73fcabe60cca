"""Exercise actor-loss: the PPO clipped surrogate loss."""

import torch


def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    expected = log_probs_new.shape
    if log_probs_old.shape != expected:
        raise ValueError(f"log_probs_old shape {tuple(log_probs_old.shape)} != {tuple(expected)}")
    if advantages.shape != expected:
        raise ValueError(f"advantages shape {tuple(advantages.shape)} != {tuple(expected)}")

    log_ratio = (log_probs_new - log_probs_old).detach()
    ratio = log_ratio.exp()
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - clip_range, 1.0 + clip_range) * advantages
    pessimistic = torch.where(unclipped >= clipped, unclipped, clipped)
    return -(pessimistic.sum() / pessimistic.numel())


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
