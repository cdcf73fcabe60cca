"""PPO critic loss, clipping the new value into [old - c, old + c]."""

import torch


def compute_critic_loss(values, old_values, returns, mask=None, clip_range=None):
    """0.5 * batch mean of the per-row masked mean of the (clipped) squared error."""
    if old_values.shape != values.shape:
        raise ValueError(f"old_values: shape {tuple(old_values.shape)} != values {tuple(values.shape)}")
    if returns.shape != values.shape:
        raise ValueError(f"returns: shape {tuple(returns.shape)} != values {tuple(values.shape)}")
    if mask is not None and mask.shape != values.shape:
        raise ValueError(f"mask: shape {tuple(mask.shape)} != values {tuple(values.shape)}")

    m = torch.ones_like(values) if mask is None else mask.to(values.dtype)
    pad = m == 0
    values = values.masked_fill(pad, 0.0)
    old_values = old_values.detach().masked_fill(pad, 0.0)
    returns = returns.detach().masked_fill(pad, 0.0)

    err = (values - returns).pow(2)
    if clip_range is not None:
        clipped = torch.clamp(values.detach(), old_values - clip_range, old_values + clip_range)
        err = torch.maximum(err, (clipped - returns).pow(2))

    per_row = (err * m).sum(-1) / (~pad).sum(-1).clamp(min=1)
    return 0.5 * per_row.mean()


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
