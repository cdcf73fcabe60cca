"""Token-level rewards for PPO with a KL penalty against the reference model."""

import torch


def compute_token_rewards(scores, log_probs_old, ref_log_probs, mask=None, kl_coef=0.1):
    if log_probs_old.shape != ref_log_probs.shape:
        raise ValueError(f"ref_log_probs {tuple(ref_log_probs.shape)} vs log_probs_old {tuple(log_probs_old.shape)}")
    if mask is not None and mask.shape != log_probs_old.shape:
        raise ValueError(f"mask {tuple(mask.shape)} vs log_probs_old {tuple(log_probs_old.shape)}")
    if scores.shape[0] != log_probs_old.shape[0]:
        raise ValueError(f"scores {tuple(scores.shape)} should be [{log_probs_old.shape[0]}]")

    m = torch.ones_like(log_probs_old) if mask is None else mask.to(log_probs_old.dtype)
    valid = m > 0
    log_ratio = (log_probs_old.detach() - ref_log_probs.detach())
    rewards = -kl_coef * log_ratio

    lengths = valid.long().sum(-1)
    rows = torch.nonzero(lengths > 0).squeeze(-1)
    rewards = rewards.index_put(
        (rows, lengths[rows] - 1), scores.detach()[rows].to(rewards.dtype), accumulate=True
    )
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
