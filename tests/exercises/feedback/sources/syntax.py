import torch


def compute_gae(rewards, values, mask=None, gamma=1.0, lam=0.95):
    advantages = torch.zeros_like(rewards
    return advantages, advantages + values
