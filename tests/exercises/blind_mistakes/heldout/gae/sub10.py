"""Exercise gae: Generalized Advantage Estimation over padded responses."""

import torch


def compute_gae(rewards, values, mask=None, gamma=1.0, lam=0.95):
    if tuple(values.shape) != tuple(rewards.shape):
        raise ValueError("values shape does not match rewards")
    if mask is not None and tuple(mask.shape) != tuple(rewards.shape):
        raise ValueError("mask shape does not match rewards")

    out_dtype = rewards.dtype
    with torch.no_grad():
        valid = torch.ones(rewards.shape, dtype=torch.bool, device=rewards.device) if mask is None else mask.bool()
        m = valid.double()
        r = rewards.double().masked_fill(~valid, 0.0)
        v = values.detach().double().masked_fill(~valid, 0.0)
        B, T = r.shape
        idx = torch.arange(T, device=r.device)
        expo = (idx.view(1, -1) - idx.view(-1, 1)).double()
        disc = torch.where(expo >= 0, (gamma * lam) ** expo.clamp(min=0), torch.zeros_like(expo))
        next_v = torch.cat([v[:, 1:], torch.zeros_like(v[:, :1])], dim=1)
        delta = (r + gamma * next_v - v) * m
        adv = (delta @ disc.T) * m
        ret = (adv + v) * m
    return adv.to(out_dtype), ret.to(out_dtype)


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
