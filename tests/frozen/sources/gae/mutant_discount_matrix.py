import math
import torch
import torch.nn.functional as F

def compute_gae(rewards, values, mask=None, gamma=1.0, lam=0.95):
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
