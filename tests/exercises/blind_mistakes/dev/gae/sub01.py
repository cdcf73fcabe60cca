"""Exercise gae: Generalized Advantage Estimation over padded responses."""

import torch


def compute_gae(rewards, values, mask=None, gamma=1.0, lam=0.95):
    if values.shape != rewards.shape:
        raise ValueError(f"values has shape {tuple(values.shape)}, expected {tuple(rewards.shape)}")
    if mask is not None and mask.shape != rewards.shape:
        raise ValueError(f"mask has shape {tuple(mask.shape)}, expected {tuple(rewards.shape)}")

    out_dtype = rewards.dtype
    work = torch.float32 if out_dtype in (torch.bfloat16, torch.float16) else out_dtype  # half types: f32 sums
    with torch.no_grad():
        valid = torch.ones_like(rewards, dtype=torch.bool) if mask is None else mask.bool()
        m = valid.to(work)
        r = torch.where(valid, rewards.to(work), 0.0)
        v = values.detach().to(work)
        B, T = rewards.shape
        lastgaelam = torch.zeros(B, dtype=work, device=rewards.device)
        advantages_reversed = []
        for t in reversed(range(T)):
            nextvalues = v[:, t + 1] if t < T - 1 else torch.zeros_like(lastgaelam)
            delta = r[:, t] + gamma * nextvalues - v[:, t]
            lastgaelam = (delta + gamma * lam * lastgaelam) * m[:, t]
            advantages_reversed.append(lastgaelam)
        advantages = torch.stack(advantages_reversed[::-1], dim=1)
        returns = (advantages + v) * m
    return advantages.to(out_dtype), returns.to(out_dtype)


if __name__ == "__main__":
    # One response of 3 tokens, reward only at the end, gamma = lam = 1:
    # deltas are 0, 0, 0.5 and every advantage is 0.5; returns are 1.0.
    adv, ret = compute_gae(torch.tensor([[0.0, 0.0, 1.0]]), torch.tensor([[0.5, 0.5, 0.5]]), gamma=1.0, lam=1.0)
    assert torch.allclose(adv, torch.tensor([[0.5, 0.5, 0.5]])), adv
    assert torch.allclose(ret, torch.tensor([[1.0, 1.0, 1.0]])), ret
    # lam = 0.5 discounts the future advantage: 0.5, then 0 + 0.5 * 0.5, then 0.5 * 0.25.
    adv, ret = compute_gae(torch.tensor([[0.0, 0.0, 1.0]]), torch.tensor([[0.5, 0.5, 0.5]]), gamma=1.0, lam=0.5)
    assert torch.allclose(adv, torch.tensor([[0.125, 0.25, 0.5]])), adv
    assert torch.allclose(ret, torch.tensor([[0.625, 0.75, 1.0]])), ret
    # The last token is padding (garbage 9 and 7): V_2 counts as 0 and position 2 gets 0.
    # delta_1 = 2 + 0 - 0.25 = 1.75; delta_0 = 1 + 0.25 - 0.5 = 0.75; A_0 = 0.75 + 1.75.
    values = torch.tensor([[0.5, 0.25, 7.0]], requires_grad=True)
    adv, ret = compute_gae(torch.tensor([[1.0, 2.0, 9.0]]), values, torch.tensor([[1.0, 1.0, 0.0]]),
                           gamma=1.0, lam=1.0)
    assert torch.allclose(adv, torch.tensor([[2.5, 1.75, 0.0]])), adv
    assert torch.allclose(ret, torch.tensor([[3.0, 2.0, 0.0]])), ret
    assert not adv.requires_grad and not ret.requires_grad
    print("self-tests passed")
