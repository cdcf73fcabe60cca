"""Exercise token-rewards: KL-shaped per-token rewards for PPO on language models."""

import torch


def compute_token_rewards(scores, log_probs_old, ref_log_probs, mask=None, kl_coef=0.1):
    if ref_log_probs.shape != log_probs_old.shape:
        raise ValueError(f"ref_log_probs {tuple(ref_log_probs.shape)} != log_probs_old {tuple(log_probs_old.shape)}")
    if mask is not None and mask.shape != log_probs_old.shape:
        raise ValueError(f"mask {tuple(mask.shape)} != log_probs_old {tuple(log_probs_old.shape)}")
    if log_probs_old.dim() != 2 or scores.shape != log_probs_old.shape[:1]:
        raise ValueError(f"scores {tuple(scores.shape)} must be [B] for log_probs_old {tuple(log_probs_old.shape)}")

    old = log_probs_old.detach()
    ref = ref_log_probs.detach()
    valid = torch.ones_like(old, dtype=torch.bool) if mask is None else mask != 0
    next_valid = torch.cat([valid[:, 1:], torch.zeros_like(valid[:, :1])], dim=1)
    is_last = valid & ~next_valid
    zero = torch.zeros_like(old)
    kl_part = -kl_coef * (old - ref)
    score_part = torch.where(is_last, scores.detach().to(old.dtype).unsqueeze(1).expand_as(old), zero)
    return kl_part + score_part


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
