"""GRPO advantages, one group of answers at a time."""

import torch


def compute_grpo_advantages(scores, group_size, eps=1e-6, scale_by_std=True):
    """(score - group mean) / (group std + eps) for consecutive groups of group_size."""
    if not torch.is_tensor(scores):
        raise ValueError("scores must be a tensor")
    scores = scores.flatten()
    if isinstance(group_size, bool) or group_size != int(group_size):
        raise ValueError(f"group_size must be a whole number, got {group_size!r}")
    group_size = int(group_size)
    if group_size < 2:
        raise ValueError("group_size must be >= 2")
    if eps < 0:
        raise ValueError("eps must be >= 0")
    if scores.numel() % group_size:
        raise ValueError(f"len(scores) = {scores.numel()} is not a multiple of group_size = {group_size}")

    dtype = scores.dtype if scores.is_floating_point() else torch.float32
    x = scores.double() if dtype == torch.float64 else scores.float()
    chunks = []
    for group in x.split(group_size):
        if bool((group == group[0]).all()):
            chunks.append(torch.zeros_like(group))
            continue
        adv = group - group.mean()
        if scale_by_std:
            adv = adv / (group.std(unbiased=True) + eps)
        chunks.append(adv)
    if not chunks:
        return x.new_zeros(0).to(dtype)
    return torch.cat(chunks).to(dtype)


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
