"""Exercise grpo-advantages: group-relative outcome advantages (GRPO)."""

from collections import defaultdict

import torch


def compute_grpo_advantages(scores, group_size, eps=1e-6, scale_by_std=True):
    if scores.dim() != 1:
        raise ValueError("scores must be a 1-D [N] tensor")
    if group_size < 2:
        raise ValueError("group_size must be at least 2 (the unbiased std needs two answers)")
    bsz = scores.shape[0]
    if bsz % group_size != 0:
        raise ValueError(f"N={bsz} is not a multiple of group_size={group_size}")
    if eps < 0:
        raise ValueError("eps must be >= 0")

    index = [i // group_size for i in range(bsz)]
    x = scores.clone() if scores.is_floating_point() else scores.to(torch.float32)
    id2score = defaultdict(list)
    id2mean, id2std, id2flat = {}, {}, {}
    with torch.no_grad():
        for i in range(bsz):
            id2score[index[i]].append(x[i])
        for idx, group in id2score.items():
            t = torch.stack(group)
            id2mean[idx] = torch.mean(t)
            id2std[idx] = torch.std(t)
            id2flat[idx] = bool(t.max() == t.min())
        for i in range(bsz):
            if scale_by_std:
                x[i] = (x[i] - id2mean[index[i]]) / (id2std[index[i]] + eps)
            else:
                x[i] = x[i] - id2mean[index[i]]
    return x


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
