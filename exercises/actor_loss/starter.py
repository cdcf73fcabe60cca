"""Exercise actor-loss: the PPO clipped surrogate loss.

Fill in the `# YOUR CODE` blocks, run `python this_file.py` for the self-tests, then submit
with `ppo-submit this_file.py`.
"""

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
    """
    # YOUR CODE: check that log_probs_old and advantages have the shape of log_probs_new

    # YOUR CODE: the probability ratio

    # YOUR CODE: the unclipped and clipped surrogate terms (pg_loss1, pg_loss2)

    # YOUR CODE: the pessimistic (elementwise minimum) objective, negated and averaged
    raise NotImplementedError("compute_actor_loss is not written yet")


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
