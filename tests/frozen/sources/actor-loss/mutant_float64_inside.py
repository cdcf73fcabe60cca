import math
import torch
import torch.nn.functional as F

def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    if log_probs_old.shape != log_probs_new.shape or advantages.shape != log_probs_new.shape:
        raise ValueError("shapes differ")
    new, old, adv = log_probs_new.double(), log_probs_old.double(), advantages.double()
    ratio = torch.exp(new - old)
    clipped = torch.clamp(ratio, 1 - clip_range, 1 + clip_range)
    return (-torch.min(ratio * adv, clipped * adv).mean()).to(log_probs_new.dtype)
