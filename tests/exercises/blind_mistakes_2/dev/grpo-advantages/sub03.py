"""Group-relative advantages with the variance written out by hand."""

import torch


def _check_group_size(group_size):
    if type(group_size) is bool:
        raise ValueError("group_size must be a number, not a bool")
    if isinstance(group_size, float) and group_size.is_integer():
        group_size = int(group_size)
    if not isinstance(group_size, int):
        raise ValueError(f"group_size must be an integer, got {group_size!r}")
    if group_size < 2:
        raise ValueError(f"group_size must be >= 2, got {group_size}")
    return group_size


def compute_grpo_advantages(scores, group_size, eps=1e-6, scale_by_std=True):
    G = _check_group_size(group_size)
    if scores.dim() != 1:
        raise ValueError(f"scores should be [N], got {list(scores.shape)}")
    if scores.shape[0] % G != 0:
        raise ValueError(f"N = {scores.shape[0]} is not a multiple of group_size = {G}")
    if eps < 0:
        raise ValueError("eps must not be negative")

    out_dtype = scores.dtype if scores.is_floating_point() else torch.float32
    work = torch.float64 if out_dtype == torch.float64 else torch.float32
    x = scores.to(work).reshape(-1, G)

    mean = x.sum(dim=1, keepdim=True) / G
    dev = x - mean
    if scale_by_std:
        std = (dev.pow(2).sum(dim=1, keepdim=True) / (G - 1) + eps).sqrt()
        dev = dev / std
    constant = (x.max(dim=1, keepdim=True).values - x.min(dim=1, keepdim=True).values) == 0
    dev = dev.masked_fill(constant, 0.0)
    return dev.flatten().to(out_dtype)


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
