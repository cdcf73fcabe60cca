import torch
import torch.nn.functional as F  # noqa: F401  (not needed, kept from my notebook)


def check_shapes(a, b):
    if a.shape != b.shape:
        raise ValueError(
            "ref_log_probs shape %s must match log_probs shape %s" % (tuple(b.shape), tuple(a.shape))
        )


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    check_shapes(log_probs, ref_log_probs)
    log_ratio = log_probs - ref_log_probs
    if kind == "k1":
        return log_ratio
    if kind == "k2":
        half = 0.5
        return half * log_ratio * log_ratio
    if kind != "k3":
        raise ValueError("kind " + str(kind) + " unknown")
    ratio_minus_one = torch.expm1(-log_ratio)
    return ratio_minus_one + log_ratio
