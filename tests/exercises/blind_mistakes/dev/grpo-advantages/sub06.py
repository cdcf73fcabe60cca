"""Exercise grpo-advantages: group-relative outcome advantages (GRPO)."""

import torch


def compute_grpo_advantages(scores, group_size, eps=1e-6, scale_by_std=True):
    if not torch.is_tensor(scores):
        raise ValueError("scores should be a 1-D tensor")
    if not group_size >= 2:
        raise ValueError("group_size should be >= 2")
    if scores.shape[0] % group_size != 0:
        raise ValueError("scores length should be divisible by group_size")
    if eps < 0:
        raise ValueError("eps should be >= 0")
    s = scores if scores.is_floating_point() else scores.float()
    grouped = s.unflatten(0, (-1, group_size))
    std, mean = torch.std_mean(grouped, dim=-1, correction=1, keepdim=True)
    adv = grouped - mean
    adv = adv / (std + eps)
    lo, hi = grouped.aminmax(dim=-1, keepdim=True)
    return adv.masked_fill(lo == hi, 0)


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
