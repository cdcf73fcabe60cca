import math

import torch


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    if not torch.is_tensor(log_probs) or not torch.is_tensor(ref_log_probs):
        raise ValueError("log_probs and ref_log_probs must be tensors")
    if log_probs.numel() != ref_log_probs.numel() or log_probs.shape != ref_log_probs.shape:
        raise ValueError("the shape of ref_log_probs does not match log_probs")
    if kind == "k1":
        return log_probs - ref_log_probs
    if kind == "k2":
        return (log_probs - ref_log_probs).square().div(2)
    if kind == "k3":
        # exp(u) - u - 1 with u = log q - log p; expm1 avoids exp(u) - 1 cancelling to 0
        u = ref_log_probs - log_probs
        return u.expm1().sub(u)
    raise ValueError("kind must be one of k1/k2/k3 (got %s); see %s" % (kind, "k" + str(math.floor(3.5))))
