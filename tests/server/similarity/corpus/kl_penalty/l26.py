import torch


def _log_ratio(log_probs, ref_log_probs):
    if log_probs.shape != ref_log_probs.shape:
        raise ValueError(f"ref_log_probs has shape {list(ref_log_probs.shape)}, log_probs {list(log_probs.shape)}")
    return log_probs - ref_log_probs


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    if kind not in ["k1", "k2", "k3"]:
        raise ValueError("kind should be k1, k2 or k3")
    lr = _log_ratio(log_probs, ref_log_probs)
    powers = {"k1": 1, "k2": 2}
    if kind in powers:
        p = powers[kind]
        return lr if p == 1 else lr.pow(p) / p
    return torch.expm1(-lr) + lr
