"""Exercise actor-loss: the PPO clipped surrogate loss."""

import torch


def _check_same_shape(name, tensor, reference):
    if not isinstance(tensor, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.shape != reference.shape:
        raise ValueError(f"{name} has shape {list(tensor.shape)} but log_probs_new has {list(reference.shape)}; "
                         "broadcasting is not accepted")


def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    if not isinstance(log_probs_new, torch.Tensor):
        raise ValueError("log_probs_new must be a torch.Tensor")
    _check_same_shape("log_probs_old", log_probs_old, log_probs_new)
    _check_same_shape("advantages", advantages, log_probs_new)
    eps = float(clip_range)
    low, high = 1.0 - eps, 1.0 + eps

    log_ratio = log_probs_new.double() - log_probs_old.detach().double()
    ratio = torch.exp(log_ratio)
    adv = advantages.detach().double()
    objective = torch.min(ratio * adv, torch.exp(torch.clamp(log_ratio, min=-eps, max=eps)) * adv)
    loss = -objective.mean()
    if loss.dtype != log_probs_new.dtype or loss.device != log_probs_new.device:
        loss = loss.to(dtype=log_probs_new.dtype, device=log_probs_new.device)
    return loss


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
