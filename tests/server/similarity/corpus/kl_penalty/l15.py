import torch


def _same_shape_or_fail(log_probs, ref_log_probs):
    got, want = ref_log_probs.shape, log_probs.shape
    if got == want:
        return
    raise ValueError(f"ref_log_probs: expected shape {tuple(want)}, got {tuple(got)}")


def _kind_or_fail(kind):
    for allowed in ("k1", "k2", "k3"):
        if kind == allowed:
            return allowed
    raise ValueError(f"unknown kind {kind!r}")


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    kind = _kind_or_fail(kind)
    _same_shape_or_fail(log_probs, ref_log_probs)
    log_ratio = torch.subtract(log_probs, ref_log_probs)
    if kind == "k1":
        return log_ratio
    if kind == "k2":
        return torch.multiply(log_ratio, log_ratio) / 2
    return torch.subtract(torch.expm1(-log_ratio), -log_ratio)
