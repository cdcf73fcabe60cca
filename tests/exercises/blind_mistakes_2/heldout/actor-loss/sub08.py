"""compute_actor_loss: PPO-clip objective, negated for gradient descent."""

import torch


def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    """Return -mean(min(r * A, clip(r) * A)) with r = exp(new - old)."""
    if not (log_probs_new.shape == log_probs_old.shape == advantages.shape):
        bad = "log_probs_old" if log_probs_old.shape != log_probs_new.shape else "advantages"
        raise ValueError(f"shape mismatch: {bad} does not match log_probs_new {tuple(log_probs_new.shape)}")

    ratio = (log_probs_new - log_probs_old).clamp(-20.0, 20.0).exp()
    low = ratio.new_tensor(1.0 - clip_range)
    high = ratio.new_tensor(1.0 + clip_range)
    clipped_ratio = torch.minimum(torch.maximum(ratio, low), high)

    surrogate = torch.maximum(ratio * advantages, clipped_ratio * advantages)
    return -(surrogate.sum() / ratio.numel())


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
