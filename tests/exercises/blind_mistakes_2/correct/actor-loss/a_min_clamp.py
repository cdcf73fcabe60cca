"""Exercise actor-loss: the PPO clipped surrogate loss."""

import torch


def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    """PPO clipped surrogate loss.

    Args:
        log_probs_new: log-probabilities of the taken actions under the current policy,
            any shape (e.g. [B, T]); gradient must flow to this tensor.
        log_probs_old: the same under the policy that sampled the data; same shape.
        advantages: advantage estimates A; same shape (a [B] advantage against [B, T]
            log-probs is an error, not a broadcast).
        clip_range: epsilon; the ratio is clipped to [1 - epsilon, 1 + epsilon].

    Returns:
        A 0-dim tensor in the inputs' dtype and device:
        -mean(min(ratio * A, clamp(ratio, 1 - eps, 1 + eps) * A)), ratio = exp(new - old).

    Raises:
        ValueError naming the offending argument when the shapes differ.
    Must not modify its inputs in place.

    Graded (points in brackets; * counts only once the values on ordinary inputs are right):
        - value on random inputs (default clip_range) [14]
        - value with non-default clip_range [10]
        - clipped side: ratio beyond 1 +/- clip_range in the advantage's direction [12]
        - unclipped side: ratio beyond the range against the advantage, and inside it [10]
        - gradient with respect to log_probs_new; only log_probs_new's gradient is graded [14]
        - zero gradient where the clipped term is the minimum; that element's gradient is exactly 0 [8]
        - ValueError on mismatched shapes (no broadcasting) [7*]
        - 0-dim result in the inputs' dtype (float32, float64, bfloat16) and device [8*]
        - inputs not modified in place [5*]
        - any leading shape (1-D and 3-D inputs) [4]
        - peak memory on a 16 x 32768 input within budget; forward and backward; budget max(1.5 x the
          reference's peak, reference + 16 MiB): a float64 copy of the inputs exceeds it, so compute in the
          inputs' dtype [8*]

    Tolerance: values and gradients are compared with the reference per dtype: float64 within 1e-10
    relative (+1e-12 absolute), float32 within 1e-4 relative + 1e-5 absolute, bfloat16 within 2e-2
    relative + 2e-2 absolute.
    """
    if log_probs_old.shape != log_probs_new.shape:
        raise ValueError(
            f"log_probs_old has shape {tuple(log_probs_old.shape)} but log_probs_new has {tuple(log_probs_new.shape)}"
        )
    if advantages.shape != log_probs_new.shape:
        raise ValueError(
            f"advantages has shape {tuple(advantages.shape)} but log_probs_new has {tuple(log_probs_new.shape)}"
        )

    ratio = torch.exp(log_probs_new - log_probs_old)

    pg_loss1 = ratio * advantages
    pg_loss2 = torch.clamp(ratio, 1.0 - clip_range, 1.0 + clip_range) * advantages

    return -torch.min(pg_loss1, pg_loss2).mean()


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
