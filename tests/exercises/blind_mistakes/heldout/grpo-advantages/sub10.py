"""Exercise grpo-advantages: group-relative outcome advantages (GRPO)."""

import torch


def compute_grpo_advantages(scores, group_size, eps=1e-6, scale_by_std=True):
    if scores.dim() != 1:
        raise ValueError(f"scores must be [N], got {list(scores.shape)}")
    if group_size < 2:
        raise ValueError(f"group_size={group_size} < 2")
    if len(scores) % group_size != 0:
        raise ValueError(f"N={len(scores)} not divisible by group_size={group_size}")
    if eps < 0:
        raise ValueError(f"eps={eps} < 0")

    work = scores if scores.is_floating_point() else scores.to(torch.float32)
    G = group_size
    groups = work.reshape(-1, G)
    mean = groups.sum(dim=1, keepdim=True) / G
    dev = groups - mean
    out = dev
    if scale_by_std:
        var = (dev * dev).sum(dim=1, keepdim=True) / (G - 1)
        out = dev / (var + eps)
    same = groups.max(dim=1, keepdim=True).values == groups.min(dim=1, keepdim=True).values
    out = torch.where(same, torch.zeros_like(out), out)
    return out.flatten()


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
