"""Value loss, row by row over the valid tokens only."""

import torch


def compute_critic_loss(values, old_values, returns, mask=None, clip_range=None):
    if old_values.shape != values.shape or returns.shape != values.shape:
        bad = "old_values" if old_values.shape != values.shape else "returns"
        raise ValueError(f"{bad} must have the shape of values {tuple(values.shape)}")
    if mask is not None and mask.shape != values.shape:
        raise ValueError(f"mask must have the shape of values {tuple(values.shape)}")

    valid = torch.ones_like(values, dtype=torch.bool) if mask is None else mask.bool()
    row_losses = []
    for b in range(values.shape[0]):
        keep = valid[b]
        v = values[b][keep]
        old = old_values[b][keep].detach()
        ret = returns[b][keep].detach()
        err = (v - ret) ** 2
        if clip_range is not None:
            v_clip = old + (v - old).clamp(-clip_range, clip_range)
            err = torch.min(err, (v_clip - ret) ** 2)
        row_losses.append(err.sum() / max(v.numel(), 1))
    return 0.5 * torch.stack(row_losses).mean()


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
