"""Exercise gae: Generalized Advantage Estimation over padded responses."""

import torch

_BLOCK = 32


def compute_gae(rewards, values, mask=None, gamma=1.0, lam=0.95):
    if values.shape != rewards.shape:
        raise ValueError(f"values shape {tuple(values.shape)} != rewards shape {tuple(rewards.shape)}")
    if mask is not None and mask.shape != rewards.shape:
        raise ValueError(f"mask shape {tuple(mask.shape)} != rewards shape {tuple(rewards.shape)}")

    out_dtype = rewards.dtype
    work = torch.float32 if out_dtype in (torch.bfloat16, torch.float16) else out_dtype
    with torch.no_grad():
        valid = torch.ones_like(rewards, dtype=torch.bool) if mask is None else mask.bool()
        zero = torch.zeros((), dtype=work, device=rewards.device)
        r = torch.where(valid, rewards.to(work), zero)
        v = torch.where(valid, values.detach().to(work), zero)
        B, T = r.shape
        # V_{t+1}: the next value, 0 after the last valid token (v is already 0 on padding)
        next_v = torch.cat([torch.zeros(B, 1, dtype=work, device=r.device), v[:, :-1]], dim=1)
        deltas = torch.where(valid, r + gamma * next_v - v, zero)

        c = gamma * lam
        idx = torch.arange(max(T, _BLOCK), device=r.device)
        expo = (idx.view(1, -1) - idx.view(-1, 1)).to(work)  # j - i
        c_t = torch.tensor(c, dtype=work, device=r.device)
        disc = torch.where(expo >= 0, torch.pow(c_t, expo.clamp(min=0)), zero)  # disc[i, j] = c^(j-i), j >= i

        adv = torch.zeros_like(r)
        carry = torch.zeros(B, dtype=work, device=r.device)  # A at the start of the following block
        end = T
        while end > 0:
            start = max(0, end - _BLOCK)
            L = end - start
            block = deltas[:, start:end]
            d = disc[:L, :L]
            tail = torch.pow(c_t, torch.arange(L, 0, -1, device=r.device).to(work))  # c^(L - i)
            a_block = block @ d.T + carry.unsqueeze(1) * tail
            adv[:, start:end] = a_block
            carry = a_block[:, 0]
            end = start
        adv = torch.where(valid, adv, zero)
        ret = torch.where(valid, adv + v, zero)
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
