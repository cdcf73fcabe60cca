import torch


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    if kind == "k1" or kind == "k2" or kind == "k3":
        if log_probs.shape == ref_log_probs.shape:
            logr = log_probs - ref_log_probs
            if kind == "k1":
                return logr
            elif kind == "k2":
                return logr ** 2 / 2
            else:
                return torch.expm1(-logr) + logr
        else:
            raise ValueError("ref_log_probs: shape mismatch with log_probs")
    else:
        raise ValueError("invalid kind")
