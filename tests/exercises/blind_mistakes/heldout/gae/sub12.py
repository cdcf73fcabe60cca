"""Exercise gae: Generalized Advantage Estimation over padded responses."""

import torch


def compute_gae(rewards, values, mask=None, gamma=1.0, lam=0.95):
    for name, t in (("values", values), ("mask", mask)):
        if t is not None and t.shape != rewards.shape:
            raise ValueError(f"{name} must be shaped like rewards {tuple(rewards.shape)}, got {tuple(t.shape)}")

    out_dtype = rewards.dtype
    if out_dtype in (torch.bfloat16, torch.float16):  # sum half-precision recurrences in float32
        values, rewards = values.float(), rewards.float()
    valid = torch.ones_like(rewards, dtype=torch.bool) if mask is None else mask.to(torch.bool)
    B, T = rewards.shape
    zeros = torch.zeros(B, dtype=rewards.dtype, device=rewards.device)
    advantages = torch.empty_like(rewards)
    next_value, next_adv = zeros, zeros
    for t in range(T - 1, -1, -1):
        ok = valid[:, t]
        delta = rewards[:, t] + lam * next_value - values[:, t]
        a = torch.where(ok, delta + gamma * lam * next_adv, zeros)
        advantages[:, t] = a
        next_value = torch.where(ok, values[:, t], zeros)
        next_adv = a
    returns = torch.where(valid, advantages + values, torch.zeros_like(advantages))
    return advantages, returns


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
