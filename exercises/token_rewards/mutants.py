"""Known-wrong solutions of `token-rewards`, each embodying one misconception.

Each function is self-contained (torch, F and math only) so it can be submitted as a file.
"""

import torch

from exercises.framework import mutant


@mutant("wrong sign of the KL term: the reward is -kl_coef * (log_probs_old - ref_log_probs), a penalty "
        "for drifting from the reference, not a bonus")
def wrong_kl_sign(scores, log_probs_old, ref_log_probs, mask=None, kl_coef=0.1):
    for name, t in (("ref_log_probs", ref_log_probs), ("mask", mask)):
        if t is not None and t.shape != log_probs_old.shape:
            raise ValueError(name)
    if scores.shape != log_probs_old.shape[:1]:
        raise ValueError("scores")
    with torch.no_grad():
        valid = torch.ones_like(log_probs_old, dtype=torch.bool) if mask is None else mask != 0
        rewards = torch.where(valid, kl_coef * (log_probs_old - ref_log_probs), 0.0)
        last = valid.sum(-1) - 1
        for b in range(rewards.shape[0]):
            if last[b] >= 0:
                rewards[b, last[b]] += scores[b]
    return rewards


@mutant("score added at the last position T - 1 instead of the last valid token of each row")
def score_at_last_position(scores, log_probs_old, ref_log_probs, mask=None, kl_coef=0.1):
    for name, t in (("ref_log_probs", ref_log_probs), ("mask", mask)):
        if t is not None and t.shape != log_probs_old.shape:
            raise ValueError(name)
    if scores.shape != log_probs_old.shape[:1]:
        raise ValueError("scores")
    with torch.no_grad():
        valid = torch.ones_like(log_probs_old, dtype=torch.bool) if mask is None else mask != 0
        rewards = torch.where(valid, -kl_coef * (log_probs_old - ref_log_probs), 0.0)
        rewards[:, -1] += scores
    return rewards


@mutant("the KL penalty is left on padded positions: padding must be 0")
def padding_not_zeroed(scores, log_probs_old, ref_log_probs, mask=None, kl_coef=0.1):
    for name, t in (("ref_log_probs", ref_log_probs), ("mask", mask)):
        if t is not None and t.shape != log_probs_old.shape:
            raise ValueError(name)
    if scores.shape != log_probs_old.shape[:1]:
        raise ValueError("scores")
    with torch.no_grad():
        valid = torch.ones_like(log_probs_old, dtype=torch.bool) if mask is None else mask != 0
        rewards = -kl_coef * (log_probs_old - ref_log_probs)
        last = valid.sum(-1) - 1
        for b in range(rewards.shape[0]):
            if last[b] >= 0:
                rewards[b, last[b]] += scores[b]
    return rewards


@mutant("rewards not detached: they are fixed targets for PPO and must carry no gradient")
def not_detached(scores, log_probs_old, ref_log_probs, mask=None, kl_coef=0.1):
    for name, t in (("ref_log_probs", ref_log_probs), ("mask", mask)):
        if t is not None and t.shape != log_probs_old.shape:
            raise ValueError(name)
    if scores.shape != log_probs_old.shape[:1]:
        raise ValueError("scores")
    valid = torch.ones_like(log_probs_old, dtype=torch.bool) if mask is None else mask != 0
    rewards = torch.where(valid, -kl_coef * (log_probs_old - ref_log_probs), 0.0)
    last = valid.sum(-1) - 1
    onehot = (torch.arange(rewards.shape[-1], device=rewards.device) == last.unsqueeze(-1)) & (last >= 0).unsqueeze(-1)
    return rewards + torch.where(onehot, scores.unsqueeze(-1), 0.0)


@mutant("off by one: the score lands at index sum(mask) (the first padded position), not sum(mask) - 1")
def score_off_by_one(scores, log_probs_old, ref_log_probs, mask=None, kl_coef=0.1):
    for name, t in (("ref_log_probs", ref_log_probs), ("mask", mask)):
        if t is not None and t.shape != log_probs_old.shape:
            raise ValueError(name)
    if scores.shape != log_probs_old.shape[:1]:
        raise ValueError("scores")
    with torch.no_grad():
        valid = torch.ones_like(log_probs_old, dtype=torch.bool) if mask is None else mask != 0
        rewards = torch.where(valid, -kl_coef * (log_probs_old - ref_log_probs), 0.0)
        idx = valid.sum(-1).clamp(max=rewards.shape[-1] - 1)
        for b in range(rewards.shape[0]):
            if valid[b].any():
                rewards[b, idx[b]] += scores[b]
    return rewards


@mutant("a row with no valid token gets its score at index -1 (sum(mask) - 1 wraps around to T - 1); "
        "such a row must stay all 0")
def empty_row_wraps(scores, log_probs_old, ref_log_probs, mask=None, kl_coef=0.1):
    for name, t in (("ref_log_probs", ref_log_probs), ("mask", mask)):
        if t is not None and t.shape != log_probs_old.shape:
            raise ValueError(name)
    if scores.shape != log_probs_old.shape[:1]:
        raise ValueError("scores")
    with torch.no_grad():
        valid = torch.ones_like(log_probs_old, dtype=torch.bool) if mask is None else mask != 0
        rewards = torch.where(valid, -kl_coef * (log_probs_old - ref_log_probs), 0.0)
        last = valid.sum(-1) - 1
        rewards[torch.arange(rewards.shape[0], device=rewards.device), last] += scores
    return rewards


@mutant("the score is added to every valid token instead of only the last one")
def score_on_every_token(scores, log_probs_old, ref_log_probs, mask=None, kl_coef=0.1):
    for name, t in (("ref_log_probs", ref_log_probs), ("mask", mask)):
        if t is not None and t.shape != log_probs_old.shape:
            raise ValueError(name)
    if scores.shape != log_probs_old.shape[:1]:
        raise ValueError("scores")
    with torch.no_grad():
        valid = torch.ones_like(log_probs_old, dtype=torch.bool) if mask is None else mask != 0
        rewards = -kl_coef * (log_probs_old - ref_log_probs) + scores.unsqueeze(-1)
        return torch.where(valid, rewards, 0.0)


@mutant("kl_coef hard-coded to 0.1 instead of using the argument")
def fixed_kl_coef(scores, log_probs_old, ref_log_probs, mask=None, kl_coef=0.1):
    for name, t in (("ref_log_probs", ref_log_probs), ("mask", mask)):
        if t is not None and t.shape != log_probs_old.shape:
            raise ValueError(name)
    if scores.shape != log_probs_old.shape[:1]:
        raise ValueError("scores")
    with torch.no_grad():
        valid = torch.ones_like(log_probs_old, dtype=torch.bool) if mask is None else mask != 0
        rewards = torch.where(valid, -0.1 * (log_probs_old - ref_log_probs), 0.0)
        last = valid.sum(-1) - 1
        for b in range(rewards.shape[0]):
            if last[b] >= 0:
                rewards[b, last[b]] += scores[b]
    return rewards


@mutant("no shape check on scores: a [B, 1] (or wrong-length) scores tensor is silently reshaped")
def no_scores_shape_check(scores, log_probs_old, ref_log_probs, mask=None, kl_coef=0.1):
    for name, t in (("ref_log_probs", ref_log_probs), ("mask", mask)):
        if t is not None and t.shape != log_probs_old.shape:
            raise ValueError(name)
    with torch.no_grad():
        valid = torch.ones_like(log_probs_old, dtype=torch.bool) if mask is None else mask != 0
        rewards = torch.where(valid, -kl_coef * (log_probs_old - ref_log_probs), 0.0)
        last = valid.sum(-1) - 1
        onehot = (torch.arange(rewards.shape[-1], device=rewards.device) == last.unsqueeze(-1)) & (last >= 0).unsqueeze(-1)
        return rewards + torch.where(onehot, scores.reshape(-1, 1), 0.0)
