"""Exercise grpo-advantages: group-relative outcome advantages (GRPO)."""

import torch


def compute_grpo_advantages(scores, group_size, eps=1e-6, scale_by_std=True):
    if eps < 0:
        raise ValueError("eps must not be negative")
    N = scores.numel()
    if N % group_size:
        raise ValueError("the number of scores must be a multiple of group_size")
    if group_size < 2:
        raise ValueError("group_size must be 2 or more")

    x = scores.to(torch.float32) if not scores.is_floating_point() else scores
    acc = torch.float32 if x.dtype in (torch.bfloat16, torch.float16) else x.dtype
    xa = x.to(acc)
    n_groups = N // group_size
    gid = torch.arange(N, device=x.device) // group_size
    sums = torch.zeros(n_groups, dtype=acc, device=x.device).index_add(0, gid, xa)
    mean = (sums / group_size)[gid]
    centered = xa - mean
    sq = torch.zeros(n_groups, dtype=acc, device=x.device).index_add(0, gid, centered * centered)
    std = (sq / (group_size - 1)).sqrt()[gid]
    out = centered / (std + eps)
    hi = torch.full((n_groups,), float("-inf"), dtype=acc, device=x.device).scatter_reduce(0, gid, xa, "amax")
    lo = torch.full((n_groups,), float("inf"), dtype=acc, device=x.device).scatter_reduce(0, gid, xa, "amin")
    out = torch.where((hi == lo)[gid], torch.zeros_like(out), out)
    return out.to(x.dtype)


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
