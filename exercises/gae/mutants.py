"""Known-wrong solutions of `gae`, each embodying one misconception.

Each function is self-contained (torch, F and math only) so it can be submitted as a file.
"""

import torch

from exercises.framework import mutant


@mutant("bootstrapping from padding: V_{t+1} after the last valid token must be 0, not the value stored at the padded position")
def bootstrap_from_padding(rewards, values, mask=None, gamma=1.0, lam=0.95):
    if values.shape != rewards.shape or (mask is not None and mask.shape != rewards.shape):
        raise ValueError("shapes differ")
    with torch.no_grad():
        m = torch.ones_like(rewards) if mask is None else mask.to(rewards.dtype)
        T = rewards.shape[-1]
        adv = torch.zeros_like(rewards)
        last = torch.zeros_like(rewards[:, 0])
        for t in reversed(range(T)):
            next_v = values[:, t + 1] if t + 1 < T else torch.zeros_like(last)
            delta = rewards[:, t] + gamma * next_v - values[:, t]
            last = (delta + gamma * lam * last) * m[:, t]
            adv[:, t] = last
        return adv, (adv + values) * m


@mutant("recursion through padding: the mask is applied only to the outputs, so padded rewards and values leak into the last valid tokens")
def recursion_through_padding(rewards, values, mask=None, gamma=1.0, lam=0.95):
    if values.shape != rewards.shape or (mask is not None and mask.shape != rewards.shape):
        raise ValueError("shapes differ")
    with torch.no_grad():
        m = torch.ones_like(rewards) if mask is None else mask.to(rewards.dtype)
        T = rewards.shape[-1]
        adv = torch.zeros_like(rewards)
        last = torch.zeros_like(rewards[:, 0])
        for t in reversed(range(T)):
            next_v = values[:, t + 1] if t + 1 < T else torch.zeros_like(last)
            last = rewards[:, t] + gamma * next_v - values[:, t] + gamma * lam * last
            adv[:, t] = last
        return adv * m, (adv + values) * m


@mutant("returns not masked: returns = advantages + values leaves the garbage values at padded positions instead of 0")
def returns_not_masked(rewards, values, mask=None, gamma=1.0, lam=0.95):
    if values.shape != rewards.shape or (mask is not None and mask.shape != rewards.shape):
        raise ValueError("shapes differ")
    with torch.no_grad():
        m = torch.ones_like(rewards) if mask is None else mask.to(rewards.dtype)
        r, v = rewards * m, values * m
        T = rewards.shape[-1]
        adv = torch.zeros_like(rewards)
        last = torch.zeros_like(rewards[:, 0])
        for t in reversed(range(T)):
            next_v = v[:, t + 1] if t + 1 < T else torch.zeros_like(last)
            last = (r[:, t] + gamma * next_v - v[:, t] + gamma * lam * last) * m[:, t]
            adv[:, t] = last
        return adv, adv + values


@mutant("returns still carry gradient into the critic: returns = advantages + values with values not detached")
def returns_attached(rewards, values, mask=None, gamma=1.0, lam=0.95):
    if values.shape != rewards.shape or (mask is not None and mask.shape != rewards.shape):
        raise ValueError("shapes differ")
    m = torch.ones_like(rewards) if mask is None else mask.to(rewards.dtype)
    with torch.no_grad():
        r, v = rewards * m, values * m
        T = rewards.shape[-1]
        adv = torch.zeros_like(rewards)
        last = torch.zeros_like(rewards[:, 0])
        for t in reversed(range(T)):
            next_v = v[:, t + 1] if t + 1 < T else torch.zeros_like(last)
            last = (r[:, t] + gamma * next_v - v[:, t] + gamma * lam * last) * m[:, t]
            adv[:, t] = last
    return adv, (adv + values) * m


@mutant("advantages still carry gradient into the critic: values are used without .detach() or torch.no_grad()")
def advantages_attached(rewards, values, mask=None, gamma=1.0, lam=0.95):
    if values.shape != rewards.shape or (mask is not None and mask.shape != rewards.shape):
        raise ValueError("shapes differ")
    m = torch.ones_like(rewards) if mask is None else mask.to(rewards.dtype)
    r, v = rewards.detach() * m, values * m
    T = rewards.shape[-1]
    last = torch.zeros_like(v[:, 0])
    columns = []
    for t in reversed(range(T)):
        next_v = v[:, t + 1] if t + 1 < T else torch.zeros_like(last)
        last = (r[:, t] + gamma * next_v - v[:, t] + gamma * lam * last) * m[:, t]
        columns.append(last)
    adv = torch.stack(columns[::-1], dim=1)
    return adv, (adv + v) * m


@mutant("returns as the discounted reward-to-go (Monte Carlo) instead of advantages + values (the lambda-return)")
def returns_as_reward_to_go(rewards, values, mask=None, gamma=1.0, lam=0.95):
    if values.shape != rewards.shape or (mask is not None and mask.shape != rewards.shape):
        raise ValueError("shapes differ")
    with torch.no_grad():
        m = torch.ones_like(rewards) if mask is None else mask.to(rewards.dtype)
        r, v = rewards * m, values * m
        T = rewards.shape[-1]
        adv = torch.zeros_like(rewards)
        ret = torch.zeros_like(rewards)
        last = torch.zeros_like(rewards[:, 0])
        g = torch.zeros_like(last)
        for t in reversed(range(T)):
            next_v = v[:, t + 1] if t + 1 < T else torch.zeros_like(last)
            last = (r[:, t] + gamma * next_v - v[:, t] + gamma * lam * last) * m[:, t]
            g = (r[:, t] + gamma * g) * m[:, t]
            adv[:, t] = last
            ret[:, t] = g
        return adv, ret


@mutant("recursion run forwards in time: A_t accumulates the past (A_{t-1}) instead of the future (A_{t+1})")
def forward_recursion(rewards, values, mask=None, gamma=1.0, lam=0.95):
    if values.shape != rewards.shape or (mask is not None and mask.shape != rewards.shape):
        raise ValueError("shapes differ")
    with torch.no_grad():
        m = torch.ones_like(rewards) if mask is None else mask.to(rewards.dtype)
        r, v = rewards * m, values * m
        T = rewards.shape[-1]
        adv = torch.zeros_like(rewards)
        last = torch.zeros_like(rewards[:, 0])
        for t in range(T):
            next_v = v[:, t + 1] if t + 1 < T else torch.zeros_like(last)
            last = (r[:, t] + gamma * next_v - v[:, t] + gamma * lam * last) * m[:, t]
            adv[:, t] = last
        return adv, (adv + v) * m


@mutant("gamma missing from the TD error: delta_t = r_t + V_{t+1} - V_t instead of r_t + gamma * V_{t+1} - V_t")
def delta_without_gamma(rewards, values, mask=None, gamma=1.0, lam=0.95):
    if values.shape != rewards.shape or (mask is not None and mask.shape != rewards.shape):
        raise ValueError("shapes differ")
    with torch.no_grad():
        m = torch.ones_like(rewards) if mask is None else mask.to(rewards.dtype)
        r, v = rewards * m, values * m
        T = rewards.shape[-1]
        adv = torch.zeros_like(rewards)
        last = torch.zeros_like(rewards[:, 0])
        for t in reversed(range(T)):
            next_v = v[:, t + 1] if t + 1 < T else torch.zeros_like(last)
            last = (r[:, t] + next_v - v[:, t] + gamma * lam * last) * m[:, t]
            adv[:, t] = last
        return adv, (adv + v) * m


@mutant("whitening inside GAE: the advantages come back normalised, but GAE returns the raw advantages (whiten later, separately)")
def whitened_advantages(rewards, values, mask=None, gamma=1.0, lam=0.95):
    if values.shape != rewards.shape or (mask is not None and mask.shape != rewards.shape):
        raise ValueError("shapes differ")
    with torch.no_grad():
        m = torch.ones_like(rewards) if mask is None else mask.to(rewards.dtype)
        r, v = rewards * m, values * m
        T = rewards.shape[-1]
        adv = torch.zeros_like(rewards)
        last = torch.zeros_like(rewards[:, 0])
        for t in reversed(range(T)):
            next_v = v[:, t + 1] if t + 1 < T else torch.zeros_like(last)
            last = (r[:, t] + gamma * next_v - v[:, t] + gamma * lam * last) * m[:, t]
            adv[:, t] = last
        ret = (adv + v) * m
        n = m.sum().clamp(min=2)
        mean = (adv * m).sum() / n
        var = (((adv - mean) * m) ** 2).sum() / (n - 1)
        return (adv - mean) * torch.rsqrt(var + 1e-8) * m, ret


@mutant("an O(T^2) discount matrix: right values, but a [T, T] intermediate where a backward loop needs O(T)",
        memory=True)
def discount_matrix(rewards, values, mask=None, gamma=1.0, lam=0.95):
    if values.shape != rewards.shape or (mask is not None and mask.shape != rewards.shape):
        raise ValueError("shapes differ")
    with torch.no_grad():
        m = torch.ones_like(rewards) if mask is None else mask.to(rewards.dtype)
        r, v = rewards * m, values * m
        next_v = torch.cat([v[:, 1:], torch.zeros_like(v[:, :1])], dim=1)
        delta = (r + gamma * next_v - v) * m
        T = rewards.shape[-1]
        idx = torch.arange(T, device=rewards.device)
        power = (idx[None, :] - idx[:, None]).to(rewards.dtype)
        discount = torch.where(power >= 0, (gamma * lam) ** power.clamp(min=0), torch.zeros_like(power))
        adv = (delta @ discount.t()) * m
        return adv, (adv + v) * m
