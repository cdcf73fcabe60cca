"""Exercise token-rewards: KL-shaped per-token rewards for PPO on language models."""

import torch


def compute_token_rewards(scores, log_probs_old, ref_log_probs, mask=None, kl_coef=0.1):
    if ref_log_probs.shape != log_probs_old.shape:
        raise ValueError("ref_log_probs does not have the shape of log_probs_old")
    if mask is not None and mask.shape != log_probs_old.shape:
        raise ValueError("mask does not have the shape of log_probs_old")
    if scores.shape != torch.Size([log_probs_old.shape[0]]) or log_probs_old.dim() != 2:
        raise ValueError("scores must have shape [B]")

    with torch.no_grad():
        pad = torch.zeros_like(log_probs_old, dtype=torch.bool) if mask is None else mask == 0
        old = log_probs_old.double().masked_fill(pad, 0.0)
        ref = ref_log_probs.double().masked_fill(pad, 0.0)
        rewards = (-float(kl_coef)) * (old - ref)
        lengths = (~pad).long().sum(dim=1)
        has = lengths > 0
        rows = torch.arange(rewards.shape[0], device=rewards.device)[has]
        cols = (lengths - 1)[has]
        rewards = rewards + scores.double().unsqueeze(1) * (~pad)
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
