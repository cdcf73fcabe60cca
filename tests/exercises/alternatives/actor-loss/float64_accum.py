"""Style: per-element surrogates in the inputs' dtype, the mean accumulated in float64 chunk by chunk."""

import torch

_CHUNK = 1 << 14  # float64 partial sums of small chunks: no float64 copy of a large input


def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    for name, t in (("log_probs_old", log_probs_old), ("advantages", advantages)):
        if t.shape != log_probs_new.shape:
            raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {tuple(log_probs_new.shape)}")
    ratio = torch.exp(log_probs_new - log_probs_old)
    surrogate = torch.minimum(ratio * advantages, ratio.clamp(1 - clip_range, 1 + clip_range) * advantages)
    flat = surrogate.reshape(-1)
    total = torch.zeros((), dtype=torch.float64, device=flat.device)
    for chunk in flat.split(_CHUNK):
        total = total + chunk.sum(dtype=torch.float64)
    return (-total / max(flat.numel(), 1)).to(log_probs_new.dtype)


if __name__ == "__main__":
    import math

    loss = compute_actor_loss(torch.tensor([math.log(2.0)]), torch.tensor([0.0]), torch.tensor([1.0]))
    assert torch.isclose(loss, torch.tensor(-1.2)), loss  # ratio 2, A = +1: clipped to 1.2
    loss = compute_actor_loss(torch.tensor([math.log(0.5)]), torch.tensor([0.0]), torch.tensor([-1.0]))
    assert torch.isclose(loss, torch.tensor(0.8)), loss  # ratio 0.5, A = -1: min(-0.5, -0.8)
    assert loss.dim() == 0 and loss.dtype == torch.float32
    print("self-tests passed")
