import torch

K3, K2, K1 = "k3", "k2", "k1"


def compute_kl_penalty(log_probs, ref_log_probs, kind=K1):
    same = torch.Size(log_probs.shape) == torch.Size(ref_log_probs.shape)
    if not same:
        raise ValueError(f"ref_log_probs {list(ref_log_probs.shape)} vs log_probs {list(log_probs.shape)}")
    # 1. argument checks
    if kind not in (K1, K2, K3):
        raise ValueError(f"kind must be {K1}, {K2} or {K3}; got {kind}")
    # 2. the estimators
    neg_log_ratio = ref_log_probs - log_probs
    log_ratio = -neg_log_ratio
    k3 = torch.expm1(neg_log_ratio) - neg_log_ratio
    if kind == K1:
        return log_ratio
    k2 = 0.5 * torch.square(log_ratio)
    if kind == K2:
        return k2
    return k3
