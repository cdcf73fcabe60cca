"""Style: NamedTuple return (GAEOutput), masked_fill of padding, a reversed loop over columns."""

from typing import NamedTuple

import torch


class GAEOutput(NamedTuple):
    advantages: torch.Tensor
    returns: torch.Tensor


def compute_gae(rewards, values, mask=None, gamma=1.0, lam=0.95):
    for name, t in (("values", values), ("mask", mask)):
        if t is not None and t.shape != rewards.shape:
            raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {tuple(rewards.shape)}")
    dtype = rewards.dtype
    acc = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    pad = torch.zeros_like(rewards, dtype=torch.bool) if mask is None else mask == 0
    with torch.no_grad():
        r = rewards.to(acc).masked_fill(pad, 0.0)
        v = values.detach().to(acc).masked_fill(pad, 0.0)
        adv = torch.empty_like(r)
        carry = r.new_zeros(r.shape[:-1])
        next_v = r.new_zeros(r.shape[:-1])
        for t in range(r.shape[-1] - 1, -1, -1):
            carry = (r[..., t] + gamma * next_v - v[..., t] + gamma * lam * carry).masked_fill(pad[..., t], 0.0)
            adv[..., t] = carry
            next_v = v[..., t]
        ret = (adv + v).masked_fill(pad, 0.0)
    return GAEOutput(adv.to(dtype), ret.to(dtype))


if __name__ == "__main__":
    out = compute_gae(torch.tensor([[0.0, 0.0, 1.0]]), torch.tensor([[0.5, 0.5, 0.5]]), gamma=1.0, lam=0.5)
    assert torch.allclose(out.advantages, torch.tensor([[0.125, 0.25, 0.5]])), out
    assert torch.allclose(out.returns, torch.tensor([[0.625, 0.75, 1.0]])), out
    values = torch.tensor([[0.5, 0.25, 7.0]], requires_grad=True)
    adv, ret = compute_gae(torch.tensor([[1.0, 2.0, 9.0]]), values, torch.tensor([[1.0, 1.0, 0.0]]), lam=1.0)
    assert torch.allclose(adv, torch.tensor([[2.5, 1.75, 0.0]])) and torch.allclose(ret, torch.tensor([[3.0, 2.0, 0.0]]))
    assert not adv.requires_grad and not ret.requires_grad
    print("self-tests passed")
