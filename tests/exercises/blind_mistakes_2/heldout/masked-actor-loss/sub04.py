"""Exercise masked-actor-loss: the PPO clipped loss over padded responses."""

import torch


def compute_masked_actor_loss(
    log_probs_new, log_probs_old, advantages, action_mask=None, clip_range=0.2, loss_agg_mode="seq-mean-token-mean"
):
    """PPO clipped surrogate loss over a padded batch of responses.

    Args:
        log_probs_new: [B, T] log-probabilities of the sampled tokens under the current
            policy; gradient must flow to this tensor.
        log_probs_old: [B, T] the same under the policy that sampled the data.
        advantages: [B, T] per-token advantages A.
        action_mask: [B, T] of 0/1 (float or bool) marking valid response tokens, right-padded
            (each row is ones, then zeros); None means every position is valid. Padded
            positions of the other inputs may hold ANY finite value (not zeros): they must not
            leak into the result, not even as a NaN.
        clip_range: epsilon; the ratio exp(new - old) is clipped to [1 - eps, 1 + eps].
        loss_agg_mode: how per-token losses become one number:
            "seq-mean-token-mean": mean over each row's valid tokens, then mean over the B rows
                (a row with no valid token contributes 0, and still counts in the B);
            "token-mean": sum over all valid tokens of the batch / number of valid tokens.

    Returns:
        A 0-dim tensor in the inputs' dtype and device.

    Raises:
        ValueError for an unknown loss_agg_mode, or naming the offending argument when the
        shapes differ (no broadcasting).
    Must not modify its inputs in place.

    Graded (points in brackets; * counts only once the values on ordinary inputs are right):
        - seq-mean-token-mean (the default): masked mean per row, then mean over the batch [16]
        - token-mean: sum over all valid tokens divided by their count [14]
        - non-default clip_range, both modes [8]
        - edge rows: length-1 rows, and rows with no valid token (they add 0 to the batch mean, never NaN);
          with token-mean, a batch with no valid token returns 0 [12]
        - large values at padded positions do not leak (no inf * 0 = NaN); padded log-probs differ by about
          200, so exp overflows there: neither the loss nor the gradient of log_probs_new may become NaN
          (mask before exp) [6]
        - gradient with respect to log_probs_new, both modes (zero at padding); only log_probs_new's
          gradient is graded; padded positions get 0 [14]
        - ValueError for an unknown loss_agg_mode [8*]
        - ValueError on mismatched shapes (no broadcasting) [8*]
        - 0-dim result in the inputs' dtype (float32, float64, bfloat16) and device [8*]
        - inputs not modified in place [6*]

    Tolerance: values and gradients are compared with the reference per dtype: float64 within 1e-10
    relative (+1e-12 absolute), float32 within 1e-4 relative + 1e-5 absolute, bfloat16 within 2e-2
    relative + 2e-2 absolute.
    """
    if loss_agg_mode not in ("seq-mean-token-mean", "token-mean"):
        raise ValueError(f"unknown loss_agg_mode {loss_agg_mode!r}")
    for name, other in (("log_probs_old", log_probs_old), ("advantages", advantages), ("action_mask", action_mask)):
        if other is not None and other.shape != log_probs_new.shape:
            raise ValueError(f"{name} has shape {tuple(other.shape)}, expected {tuple(log_probs_new.shape)}")

    if action_mask is None:
        valid = torch.ones_like(log_probs_new, dtype=torch.bool)
    else:
        valid = action_mask.bool()

    zeros = torch.zeros_like(log_probs_new)
    log_ratio = torch.where(valid, log_probs_new - log_probs_old, zeros)
    ratio = torch.exp(log_ratio)
    adv = torch.where(valid, advantages, zeros)
    pg_loss1 = -adv * ratio
    pg_loss2 = -adv * torch.clamp(ratio, 1.0 - clip_range, 1.0 + clip_range)
    per_token = torch.where(valid, torch.max(pg_loss1, pg_loss2), zeros)

    if loss_agg_mode == "token-mean":
        return per_token.sum() / valid.sum().clamp(min=1)
    row_mean = per_token.sum(dim=1) / valid.sum(dim=1).clamp(min=1)
    return row_mean[valid.any(dim=1)].mean()


if __name__ == "__main__":
    import math

    # Row 0: two valid tokens with ratio 1 and A = +1, -2: losses -1 and +2 (row mean 0.5).
    # Row 1: one valid token with ratio 2 and A = +1: clipped to 1.2, loss -1.2.
    # Padded positions hold garbage (5.0) that must be ignored.
    new = torch.tensor([[0.0, 0.0, 5.0], [math.log(2.0), 5.0, 5.0]])
    old = torch.tensor([[0.0, 0.0, 5.0], [0.0, 5.0, -5.0]])
    adv = torch.tensor([[1.0, -2.0, 5.0], [1.0, 5.0, 5.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    seq = compute_masked_actor_loss(new, old, adv, mask)
    assert torch.isclose(seq, torch.tensor(-0.35)), seq  # (0.5 + -1.2) / 2
    tok = compute_masked_actor_loss(new, old, adv, mask, loss_agg_mode="token-mean")
    assert torch.isclose(tok, torch.tensor(-0.2 / 3)), tok  # (-1 + 2 - 1.2) / 3
    assert seq.dim() == 0
    # A row with no valid token contributes 0 and counts in the batch mean: (0.5 + 0) / 2.
    empty = compute_masked_actor_loss(new, old, adv, torch.tensor([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]))
    assert torch.isclose(empty, torch.tensor(0.25)), empty
    try:
        compute_masked_actor_loss(new, old, adv, mask, loss_agg_mode="token-sum")
    except ValueError:
        pass
    else:
        raise AssertionError("an unknown loss_agg_mode must raise ValueError")
    print("self-tests passed")
