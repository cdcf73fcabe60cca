"""Exercise critic-loss: the PPO value loss with optional value clipping."""

import torch


def compute_critic_loss(values, old_values, returns, mask=None, clip_range=None):
    """Clipped value loss of the PPO critic.

    Args:
        values: [B, T] the critic's current value estimates; gradient must flow to this tensor
            (and only to this one).
        old_values: [B, T] the critic's values when the data was collected.
        returns: [B, T] the regression targets R (advantages + old values).
        mask: [B, T] of 0/1 (float or bool) marking valid tokens, right-padded; None means every
            position is valid. Padded positions of the other inputs may hold ANY finite value:
            they must not leak into the result, not even as a NaN.
        clip_range: None for no clipping; otherwise a number c (0 included) and the new value
            is kept within c of the old one: v_clipped = old + clamp(values - old, -c, c).

    Returns:
        A 0-dim tensor in the inputs' dtype and device:
        0.5 * mean over rows of (mean over the row's valid tokens of the per-token loss), where
        the per-token loss is max((v_clipped - R)^2, (values - R)^2) with clipping, else
        (values - R)^2. A row with no valid token contributes 0 (and still counts in the mean).

    Raises:
        ValueError naming the offending argument when the shapes differ (no broadcasting).
    Must not modify its inputs in place.

    Graded (points in brackets; * counts only once the values on ordinary inputs are right):
        - unclipped loss (clip_range=None): 0.5 x masked mean of (values - R)^2 per row, mean over the batch
          [14]
        - clipped loss: max of the clipped and unclipped errors, values clipped around old_values [18]
        - clip_range=0.0 still clips (0 is a clip range, only None turns clipping off) [4]
        - edge rows: length-1 rows, and rows with no valid token (they add 0 to the batch mean, never NaN)
          [10]
        - large values at padded positions do not leak (no inf * 0 = NaN); padded positions hold values near
          +/-1e20, whose square overflows: select with torch.where before squaring; the gradient stays
          finite too [6]
        - gradient with respect to values (zero at padding; zero where the clipped error is the larger);
          gradient flows to values only [14]
        - no gradient to old_values or returns (they are targets, not parameters); they get none even when
          they require grad: detach them [8*]
        - ValueError on mismatched shapes (no broadcasting) [8*]
        - 0-dim result in the inputs' dtype (float32, float64, bfloat16) and device [10*]
        - inputs not modified in place [8*]

    Tolerance: values and gradients are compared with the reference per dtype: float64 within 1e-10
    relative (+1e-12 absolute), float32 within 1e-4 relative + 1e-5 absolute, bfloat16 within 2e-2
    relative + 2e-2 absolute.
    """
    for name, other in (("old_values", old_values), ("returns", returns), ("mask", mask)):
        if other is not None and other.shape != values.shape:
            raise ValueError(f"{name} has shape {tuple(other.shape)}, values has {tuple(values.shape)}")

    valid = torch.ones_like(values, dtype=torch.bool) if mask is None else mask.bool()
    zeros = torch.zeros_like(values)
    v = torch.where(valid, values, zeros)
    old = torch.where(valid, old_values.detach(), zeros)
    ret = torch.where(valid, returns.detach(), zeros)

    vf_loss1 = (v - ret) ** 2

    if clip_range:
        v_clipped = old + torch.clamp(v - old, -clip_range, clip_range)
        vf_loss2 = (v_clipped - ret) ** 2
        per_token = torch.max(vf_loss1, vf_loss2)
    else:
        per_token = vf_loss1

    per_token = torch.where(valid, per_token, zeros)
    row_mean = per_token.sum(dim=1) / valid.sum(dim=1).clamp(min=1)
    return 0.5 * row_mean.mean()


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
