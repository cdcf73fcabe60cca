"""Exercise token-rewards: KL-shaped per-token rewards for PPO on language models."""

import torch


def compute_token_rewards(scores, log_probs_old, ref_log_probs, mask=None, kl_coef=0.1):
    """Per-token rewards: a KL penalty on every valid token, plus the score at the last one.

    Args:
        scores: [B] the reward model's score of each response.
        log_probs_old: [B, T] log-probabilities of the sampled tokens under the policy that
            sampled them.
        ref_log_probs: [B, T] the same under the frozen reference model.
        mask: [B, T] of 0/1 (float or bool) marking valid response tokens, right-padded (each
            row is ones, then zeros); None means every position is valid. Padded positions of
            the log-probs may hold ANY finite value: they must not leak into the result.
        kl_coef: weight of the KL penalty.

    Returns:
        [B, T] rewards in the inputs' dtype and device, detached (no gradient):
        -kl_coef * (log_probs_old - ref_log_probs) on valid tokens, 0 on padding, and
        scores[b] added at the LAST VALID token of row b (not necessarily position T - 1);
        a row with no valid token is all 0.

    Raises:
        ValueError naming the offending argument when ref_log_probs or mask is not shaped
        like log_probs_old, or scores is not [B] (no broadcasting).
    Must not modify its inputs in place.

    Graded (points in brackets; * counts only once the values on ordinary inputs are right):
        - rewards on random padded batches (default kl_coef=0.1) [18]
        - non-default kl_coef [12]
        - score added at the last VALID token of each row (not at position T - 1) [14]
        - padded positions are exactly 0 [10*]
        - mask=None (every position valid) and bool masks [8]
        - edge rows: length-1 rows, and rows with no valid token (all 0, no score) [10]
        - rewards are detached (never require grad, even when the inputs do); the result never requires grad
          [10*]
        - ValueError on mismatched shapes (scores must be [B]; no broadcasting) [8*]
        - result in the inputs' dtype (float32, float64, bfloat16) and device [6*]
        - inputs not modified in place [4*]

    Tolerance: values and gradients are compared with the reference per dtype: float64 within 1e-10
    relative (+1e-12 absolute), float32 within 1e-4 relative + 1e-5 absolute, bfloat16 within 2e-2
    relative + 2e-2 absolute.
    """
    if ref_log_probs.shape != log_probs_old.shape:
        raise ValueError(f"ref_log_probs has shape {tuple(ref_log_probs.shape)}, expected {tuple(log_probs_old.shape)}")
    if mask is not None and mask.shape != log_probs_old.shape:
        raise ValueError(f"mask has shape {tuple(mask.shape)}, expected {tuple(log_probs_old.shape)}")
    if scores.dim() != 1 or scores.shape[0] != log_probs_old.shape[0]:
        raise ValueError(f"scores must have shape [{log_probs_old.shape[0]}], got {tuple(scores.shape)}")

    with torch.no_grad():
        valid = torch.ones_like(log_probs_old, dtype=torch.bool) if mask is None else mask.bool()
        kl = torch.where(valid, log_probs_old - ref_log_probs, torch.zeros_like(log_probs_old))
        rewards = -kl_coef * kl

        lengths = valid.sum(dim=1)
        last = (lengths - 1).clamp(min=0)
        bonus = torch.zeros(rewards.shape, dtype=rewards.dtype)
        bonus.scatter_(1, last.unsqueeze(1), scores.to(rewards.dtype).unsqueeze(1))
        bonus = torch.where((lengths > 0).unsqueeze(1), bonus, torch.zeros_like(bonus))
        rewards = rewards + bonus
    return rewards


if __name__ == "__main__":
    # Row 0 has two valid tokens, row 1 one; padded positions hold garbage (7.0).
    scores = torch.tensor([1.0, -2.0])
    old = torch.tensor([[-1.0, -2.0, 7.0], [-0.5, 7.0, 7.0]])
    ref = torch.tensor([[-1.5, -1.0, -7.0], [-0.5, -7.0, 7.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    rewards = compute_token_rewards(scores, old, ref, mask, kl_coef=0.1)
    # row 0: -0.1 * [0.5, -1.0] = [-0.05, 0.1], plus the score 1.0 at index 1
    # row 1: -0.1 * [0.0] = [0.0], plus the score -2.0 at index 0
    expected = torch.tensor([[-0.05, 1.1, 0.0], [-2.0, 0.0, 0.0]])
    assert torch.allclose(rewards, expected), rewards
    # A row with no valid token is all 0.
    rewards = compute_token_rewards(scores, old, ref, torch.tensor([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]))
    assert torch.allclose(rewards[1], torch.zeros(3)), rewards
    # Detached even when an input requires grad.
    assert not compute_token_rewards(scores, old.requires_grad_(), ref, mask).requires_grad
    print("self-tests passed")
