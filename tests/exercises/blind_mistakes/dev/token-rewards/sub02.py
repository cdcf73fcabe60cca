"""Exercise token-rewards: KL-shaped per-token rewards for PPO on language models."""

import torch


def compute_token_rewards(scores, log_probs_old, ref_log_probs, mask=None, kl_coef=0.1):
    if ref_log_probs.shape != log_probs_old.shape:
        raise ValueError("ref_log_probs must have the shape of log_probs_old")
    if mask is not None and mask.shape != log_probs_old.shape:
        raise ValueError("mask must have the shape of log_probs_old")
    if scores.dim() != 1 or log_probs_old.dim() != 2 or scores.shape[0] != log_probs_old.shape[0]:
        raise ValueError("scores must be a [B] tensor matching log_probs_old's batch size")

    log_probs_old = log_probs_old.detach()
    ref_log_probs = ref_log_probs.detach()
    r = scores.detach().to(log_probs_old.dtype)
    if mask is None:
        action_mask = torch.ones_like(log_probs_old)
    else:
        action_mask = mask.to(log_probs_old.dtype)

    # mask the inputs before subtracting: padded log-probs may be huge
    log_ratio = log_probs_old * action_mask - ref_log_probs * action_mask
    kl_reward = kl_coef * log_ratio
    has_token = action_mask.sum(dim=1) > 0
    eos_indices = action_mask.size(1) - 1 - action_mask.long().fliplr().argmax(dim=1, keepdim=True)
    last_reward = torch.zeros_like(kl_reward).scatter_(
        dim=1, index=eos_indices, src=r.unsqueeze(1))
    return kl_reward + last_reward


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
