"""Exercise token-rewards: KL-shaped per-token rewards for PPO on language models."""

import torch


def compute_token_rewards(scores, log_probs_old, ref_log_probs, mask=None, kl_coef=0.1):
    if ref_log_probs.shape != log_probs_old.shape:
        raise ValueError(f"ref_log_probs has shape {tuple(ref_log_probs.shape)}, "
                         f"expected {tuple(log_probs_old.shape)}")
    if mask is not None and mask.shape != log_probs_old.shape:
        raise ValueError(f"mask has shape {tuple(mask.shape)}, expected {tuple(log_probs_old.shape)}")
    if log_probs_old.dim() != 2 or scores.shape != (log_probs_old.shape[0],):
        raise ValueError(f"scores must be [B] = [{log_probs_old.shape[0]}], got {tuple(scores.shape)}")

    with torch.no_grad():
        B, T = log_probs_old.shape
        valid = torch.ones_like(log_probs_old, dtype=torch.bool) if mask is None else mask.bool()
        kl = log_probs_old.masked_fill_(~valid, 0.0) - ref_log_probs.masked_fill_(~valid, 0.0)
        non_score_reward = -kl_coef * kl
        rewards = non_score_reward.clone()
        lengths = valid.sum(dim=1)
        rows = torch.nonzero(lengths > 0).squeeze(1)
        last = lengths[rows].clamp(max=T - 1)
        rewards[rows, last] += scores.detach().to(rewards.dtype)[rows]
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
