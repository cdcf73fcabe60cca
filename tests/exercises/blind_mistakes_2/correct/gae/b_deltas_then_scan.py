"""GAE with vectorised TD errors."""

import torch


def compute_gae(rewards, values, mask=None, gamma=1.0, lam=0.95):
    """Return (advantages, returns), both detached and zero at padding."""
    if values.shape != rewards.shape:
        raise ValueError("values must have the same shape as rewards")
    if mask is not None and mask.shape != rewards.shape:
        raise ValueError("mask must have the same shape as rewards")

    rewards = rewards.detach()
    values = values.detach()
    acc = torch.float64 if rewards.dtype == torch.float64 else torch.float32
    if mask is None:
        valid = torch.ones(rewards.shape, dtype=torch.bool, device=rewards.device)
    else:
        valid = mask != 0

    r = rewards.to(acc).masked_fill(~valid, 0.0)
    v = values.to(acc).masked_fill(~valid, 0.0)
    next_v = torch.cat([v[:, 1:], torch.zeros_like(v[:, :1])], dim=1)
    deltas = (r + gamma * next_v - v).masked_fill(~valid, 0.0)

    running = torch.zeros_like(deltas[:, 0])
    steps = []
    for t in reversed(range(rewards.shape[1])):
        running = deltas[:, t] + gamma * lam * running
        steps.append(running)
    adv = torch.stack(steps[::-1], dim=1).masked_fill(~valid, 0.0)
    ret = (adv + v).masked_fill(~valid, 0.0)
    return adv.to(rewards.dtype), ret.to(rewards.dtype)


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
    adv, ret = compute_gae(torch.tensor([[1.0, 2.0, 9.0]]), values, torch.tensor([[1.0, 1.0, 0.0]]), gamma=1.0, lam=1.0)
    assert torch.allclose(adv, torch.tensor([[2.5, 1.75, 0.0]])), adv
    assert torch.allclose(ret, torch.tensor([[3.0, 2.0, 0.0]])), ret
    assert not adv.requires_grad and not ret.requires_grad
    print("self-tests passed")
