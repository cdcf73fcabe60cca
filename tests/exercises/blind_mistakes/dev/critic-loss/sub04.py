"""Exercise critic-loss: the PPO value loss with optional value clipping."""

import torch


def compute_critic_loss(values, old_values, returns, mask=None, clip_range=None):
    if old_values.shape != values.shape:
        raise ValueError("old_values shape mismatch")
    if returns.shape != values.shape:
        raise ValueError("returns shape mismatch")
    if mask is not None and mask.shape != values.shape:
        raise ValueError("mask shape mismatch")

    valid = torch.ones_like(values, dtype=torch.bool) if mask is None else mask.bool()
    m = valid.to(values.dtype)
    v = values
    o = old_values.detach()
    R = returns.detach()
    d = v - R
    sq = torch.einsum("bt,bt->bt", d, d)
    if clip_range is not None:
        dc = o + (v - o).clamp(-clip_range, clip_range) - R
        sq = torch.maximum(sq, torch.einsum("bt,bt->bt", dc, dc))
    row = torch.einsum("bt,bt->b", sq, m) / torch.einsum("bt->b", m).clamp(min=1)
    return 0.5 * torch.einsum("b->", row) / values.shape[0]


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
