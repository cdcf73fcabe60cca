"""Exercise grpo-advantages: group-relative outcome advantages (GRPO)."""

import torch


def compute_grpo_advantages(scores, group_size, eps=1e-6, scale_by_std=True):
    if scores.ndim != 1:
        raise ValueError(f"scores must be 1-D, got shape {tuple(scores.shape)}")
    if eps < 0:
        raise ValueError("eps must be >= 0")
    n = scores.shape[0]
    if n % group_size:
        raise ValueError(f"scores has {n} entries, not a multiple of group_size {group_size}")

    x = scores
    pieces = []
    for start in range(0, n, group_size):
        g = x[start:start + group_size]
        if bool(g.max() == g.min()):
            pieces.append(torch.zeros_like(g))
            continue
        centered = g - g.mean()
        if scale_by_std:
            centered = centered / (g.std(unbiased=False) + eps)
        pieces.append(centered)
    if not pieces:
        return x.clone()
    return torch.cat(pieces)


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
