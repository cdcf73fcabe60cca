"""Hidden reference solution for `pairwise-loss`. Never sent to the jail."""

import torch
import torch.nn.functional as F


def compute_pairwise_loss(chosen_rewards, rejected_rewards, margin=None):
    if rejected_rewards.shape != chosen_rewards.shape:
        raise ValueError(
            f"rejected_rewards has shape {tuple(rejected_rewards.shape)}, expected {tuple(chosen_rewards.shape)}"
        )
    logits = chosen_rewards - rejected_rewards
    if margin is not None:
        if isinstance(margin, torch.Tensor):
            if margin.dim() != 0 and margin.shape != chosen_rewards.shape:  # 0-dim: a scalar margin
                raise ValueError(f"margin has shape {tuple(margin.shape)}, expected {tuple(chosen_rewards.shape)}")
            margin = margin.to(dtype=logits.dtype)
        logits = logits - margin
    return -F.logsigmoid(logits).mean()
