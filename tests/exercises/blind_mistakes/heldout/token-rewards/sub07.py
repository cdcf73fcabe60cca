"""Exercise token-rewards: KL-shaped per-token rewards for PPO on language models."""

import torch


def _require(cond, msg):
    if not cond:
        raise ValueError(msg)


def compute_token_rewards(scores, log_probs_old, ref_log_probs, mask=None, kl_coef=0.1):
    _require(isinstance(log_probs_old, torch.Tensor) and log_probs_old.dim() == 2,
             "log_probs_old must be a [B, T] tensor")
    B, T = log_probs_old.shape
    _require(isinstance(ref_log_probs, torch.Tensor) and ref_log_probs.shape == log_probs_old.shape,
             f"ref_log_probs must have shape [{B}, {T}]")
    _require(isinstance(scores, torch.Tensor) and scores.dim() == 1 and scores.shape[0] == B,
             f"scores must have shape [{B}]")
    _require(mask is None or (isinstance(mask, torch.Tensor) and mask.shape == log_probs_old.shape),
             f"mask must have shape [{B}, {T}]")

    dtype, device = log_probs_old.dtype, log_probs_old.device
    with torch.no_grad():
        valid = torch.ones(B, T, dtype=torch.bool, device=device) if mask is None else mask.to(device) != 0
        zero = torch.zeros((), dtype=dtype, device=device)
        diff = torch.where(valid, log_probs_old, zero) - torch.where(valid, ref_log_probs.to(dtype), zero)
        rewards = torch.where(valid, diff * kl_coef, zero)
        positions = torch.arange(T, device=device).expand(B, T)
        last_index = torch.where(valid, positions, torch.full_like(positions, -1)).amax(dim=1)
        at_last = positions == last_index.unsqueeze(1)  # never true for an empty row (index -1)
        rewards = rewards + torch.where(at_last, scores.to(dtype=dtype, device=device).unsqueeze(1), zero)
    return rewards.detach()


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
