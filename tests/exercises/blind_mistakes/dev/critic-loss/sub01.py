"""Exercise critic-loss: the PPO value loss with optional value clipping."""

import torch


def masked_mean(tensor, mask, dim):
    return (tensor * mask).sum(dim=dim) / mask.sum(dim=dim).clamp(min=1)


def compute_critic_loss(values, old_values, returns, mask=None, clip_range=None):
    for name, t in (("old_values", old_values), ("returns", returns), ("mask", mask)):
        if t is not None and t.shape != values.shape:
            raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {tuple(values.shape)}")
    valid = torch.ones_like(values, dtype=torch.bool) if mask is None else mask.bool()
    maskf = valid.to(values.dtype)
    zeros = torch.zeros_like(values)
    # select before squaring: padded entries may be huge, and inf * 0 is NaN
    values = torch.where(valid, values, zeros)
    old_values = torch.where(valid, old_values.detach(), zeros)
    returns = torch.where(valid, returns.detach(), zeros)

    if clip_range is not None:
        values_clipped = old_values + (values - old_values).clamp(-clip_range, clip_range)
        surr1 = (values_clipped - returns) ** 2
        surr2 = (values - returns) ** 2
        loss = torch.min(surr1, surr2)
    else:
        loss = (values - returns) ** 2
    loss = masked_mean(loss, maskf, dim=-1).mean()
    return 0.5 * loss


if __name__ == "__main__":
    # One token: old 0, new 1, return 2. Unclipped: 0.5 * (1 - 2)^2 = 0.5.
    v, old, ret = torch.tensor([[1.0]]), torch.tensor([[0.0]]), torch.tensor([[2.0]])
    loss = compute_critic_loss(v, old, ret)
    assert torch.isclose(loss, torch.tensor(0.5)), loss
    assert loss.dim() == 0
    # clip_range 0.2: v_clipped = 0.2, (0.2 - 2)^2 = 3.24 > 1, so the loss is 0.5 * 3.24 = 1.62.
    loss = compute_critic_loss(v, old, ret, clip_range=0.2)
    assert torch.isclose(loss, torch.tensor(1.62)), loss
    # Two rows with a mask: row 0 errors 1 and 3 (mean of squares 5), row 1 one error of 2 (4);
    # the padded entries (garbage 9.0) are ignored: 0.5 * (5 + 4) / 2 = 2.25.
    values = torch.tensor([[1.0, 3.0, 9.0], [2.0, 9.0, 9.0]])
    zeros = torch.tensor([[0.0, 0.0, 9.0], [0.0, -9.0, 9.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    loss = compute_critic_loss(values, zeros, zeros, mask)
    assert torch.isclose(loss, torch.tensor(2.25)), loss
    print("self-tests passed")
