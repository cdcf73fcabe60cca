"""Exercise gae: Generalized Advantage Estimation over padded responses."""

import torch


def compute_gae(rewards, values, mask=None, gamma=1.0, lam=0.95):
    if mask is not None and mask.shape != rewards.shape:
        raise ValueError("mask must have the shape of rewards")

    out_dtype = rewards.dtype
    work = torch.float32 if out_dtype in (torch.bfloat16, torch.float16) else out_dtype  # half types: f32 sums
    with torch.no_grad():
        if mask is None:
            response_mask = torch.ones_like(rewards, dtype=work)
        else:
            response_mask = mask
        token_level_rewards = rewards.to(work) * response_mask
        vals = values.detach().to(work) * response_mask
        nextvalues = 0
        lastgaelam = 0
        advantages_reversed = []
        gen_len = rewards.shape[-1]
        for t in reversed(range(gen_len)):
            m_t = response_mask[:, t]
            nextvalues = vals[:, t] * m_t + (1 - m_t) * nextvalues
            delta = token_level_rewards[:, t] + gamma * nextvalues - vals[:, t]
            lastgaelam_ = delta + gamma * lam * lastgaelam
            lastgaelam = lastgaelam_ * m_t + (1 - m_t) * lastgaelam
            advantages_reversed.append(lastgaelam_ * m_t)
        advantages = torch.stack(advantages_reversed[::-1], dim=1)
        returns = (advantages + vals) * response_mask
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
