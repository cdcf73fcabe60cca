"""KL-shaped rewards: a per-token penalty, plus the reward model's score at the end."""

import torch


def compute_token_rewards(scores, log_probs_old, ref_log_probs, mask=None, kl_coef=0.1):
    """Rewards [B, T]: -kl_coef * (old - ref) on valid tokens, score at the last valid one."""
    B, T = log_probs_old.shape
    if ref_log_probs.shape != (B, T):
        raise ValueError("ref_log_probs must be shaped like log_probs_old")
    if mask is not None and mask.shape != (B, T):
        raise ValueError("mask must be shaped like log_probs_old")
    if scores.shape != (B,):
        raise ValueError(f"scores must be [B] = [{B}], got {list(scores.shape)}")

    with torch.no_grad():
        valid = torch.ones(B, T, dtype=torch.bool, device=log_probs_old.device) if mask is None else mask.bool()
        rewards = torch.zeros(B, T, device=log_probs_old.device)
        log_probs_old[~valid] = 0.0
        ref_log_probs[~valid] = 0.0
        kl = log_probs_old - ref_log_probs
        rewards[valid] = -kl_coef * kl[valid]
        for b in range(B):
            idx = valid[b].nonzero()
            rewards[b, idx[-1, 0]] += scores[b]
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
