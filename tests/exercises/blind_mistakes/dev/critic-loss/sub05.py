"""Exercise critic-loss: the PPO value loss with optional value clipping."""

import torch


def compute_critic_loss(values, old_values, returns, mask=None, clip_range=None):
    for name, other in (("old_values", old_values), ("returns", returns)):
        if other.shape != values.shape:
            raise ValueError(f"{name} shape mismatch: {tuple(other.shape)} vs values {tuple(values.shape)}")
    if mask is not None and mask.shape != values.shape:
        raise ValueError(f"mask shape mismatch: {tuple(mask.shape)} vs values {tuple(values.shape)}")

    valid = torch.ones_like(values, dtype=torch.bool) if mask is None else mask != 0
    zero = torch.zeros_like(values)
    v = torch.where(valid, values, zero)
    old = torch.where(valid, old_values, zero).detach()
    ret = returns.masked_fill_(~valid, 0.0).detach()

    err_unclipped = (v - ret).square()
    if clip_range is None:
        per_token = err_unclipped
    else:
        v_clipped = old + (v - old).clamp(min=-clip_range, max=clip_range)
        err_clipped = (v_clipped - ret).square()
        per_token = torch.where(err_clipped > err_unclipped, err_clipped, err_unclipped)
    per_token = torch.where(valid, per_token, zero)
    return per_token.sum().div(valid.sum().clamp(min=1)).mul(0.5)


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
