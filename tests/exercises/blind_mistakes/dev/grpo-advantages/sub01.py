"""Exercise grpo-advantages: group-relative outcome advantages (GRPO)."""

import torch


def compute_grpo_advantages(scores, group_size, eps=1e-6, scale_by_std=True):
    if not isinstance(scores, torch.Tensor) or scores.dim() != 1:
        raise ValueError("scores must be a 1-D tensor")
    if group_size < 2:
        raise ValueError(f"group_size must be >= 2, got {group_size}")
    if scores.numel() % group_size != 0:
        raise ValueError(f"len(scores)={scores.numel()} is not a multiple of group_size={group_size}")
    if eps < 0:
        raise ValueError(f"eps must be non-negative, got {eps}")

    rewards = scores if scores.is_floating_point() else scores.to(torch.float32)
    grouped = rewards.view(-1, group_size)
    mean_grouped_rewards = grouped.mean(dim=1).repeat_interleave(group_size, dim=0)
    std_grouped_rewards = grouped.std(dim=1, unbiased=False).repeat_interleave(group_size, dim=0)
    constant = (grouped.amax(dim=1) == grouped.amin(dim=1)).repeat_interleave(group_size, dim=0)
    advantages = rewards - mean_grouped_rewards
    if scale_by_std:
        advantages = advantages / (std_grouped_rewards + eps)
    return torch.where(constant, torch.zeros_like(advantages), advantages)


if __name__ == "__main__":
    # Two prompts, two answers each: groups [1, 2] and [3, 5]. Means 1.5 and 4; unbiased
    # stds sqrt(0.5) and sqrt(2); so the advantages are -+0.5/sqrt(0.5) and -+1/sqrt(2).
    adv = compute_grpo_advantages(torch.tensor([1.0, 2.0, 3.0, 5.0]), group_size=2)
    assert torch.allclose(adv, torch.tensor([-0.70710677, 0.70710677, -0.70710677, 0.70710677]), atol=1e-5), adv
    # scale_by_std=False only centers each group.
    adv = compute_grpo_advantages(torch.tensor([1.0, 2.0, 3.0, 5.0]), group_size=2, scale_by_std=False)
    assert torch.allclose(adv, torch.tensor([-0.5, 0.5, -1.0, 1.0])), adv
    # Every answer to the prompt got the same score: no signal, advantage 0 (not NaN).
    adv = compute_grpo_advantages(torch.tensor([1.0, 1.0, 1.0, 0.0, 1.0, 0.0]), group_size=3)
    assert torch.equal(adv[:3], torch.zeros(3)), adv
    assert adv.shape == (6,)
    # 5 scores do not split into groups of 2.
    try:
        compute_grpo_advantages(torch.zeros(5), group_size=2)
    except ValueError:
        pass
    else:
        raise AssertionError("expected ValueError")
    print("self-tests passed")
