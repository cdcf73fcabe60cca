"""Known-wrong solutions of `kl-penalty`, each embodying one misconception.

Each function is self-contained (torch, F and math only) so it can be submitted as a file.
"""

import torch

from exercises.framework import mutant


@mutant("k1 with the wrong sign: the log-ratio is log_probs - ref_log_probs (policy over reference)")
def k1_wrong_sign(log_probs, ref_log_probs, kind="k1"):
    if kind not in ("k1", "k2", "k3"):
        raise ValueError(f"kind {kind!r}")
    if ref_log_probs.shape != log_probs.shape:
        raise ValueError("ref_log_probs")
    d = ref_log_probs - log_probs
    if kind == "k1":
        return d
    if kind == "k2":
        return 0.5 * d ** 2
    return torch.exp(d) - d - 1


@mutant("k2 without the factor 0.5: k2 = 0.5 * (log-ratio)^2")
def k2_missing_half(log_probs, ref_log_probs, kind="k1"):
    if kind not in ("k1", "k2", "k3"):
        raise ValueError(f"kind {kind!r}")
    if ref_log_probs.shape != log_probs.shape:
        raise ValueError("ref_log_probs")
    log_ratio = log_probs - ref_log_probs
    if kind == "k1":
        return log_ratio
    if kind == "k2":
        return log_ratio ** 2
    return torch.exp(-log_ratio) + log_ratio - 1


@mutant("k3 with the ratio inverted: k3 uses exp(ref_log_probs - log_probs), the reference over the policy; "
        "exp(log_probs - ref_log_probs) estimates the reverse KL")
def k3_inverted_ratio(log_probs, ref_log_probs, kind="k1"):
    if kind not in ("k1", "k2", "k3"):
        raise ValueError(f"kind {kind!r}")
    if ref_log_probs.shape != log_probs.shape:
        raise ValueError("ref_log_probs")
    log_ratio = log_probs - ref_log_probs
    if kind == "k1":
        return log_ratio
    if kind == "k2":
        return 0.5 * log_ratio ** 2
    return torch.exp(log_ratio) - log_ratio - 1


@mutant("k3 without the - 1: exp(d) - d - 1 is 0 when the policies agree; exp(d) - d is not")
def k3_missing_one(log_probs, ref_log_probs, kind="k1"):
    if kind not in ("k1", "k2", "k3"):
        raise ValueError(f"kind {kind!r}")
    if ref_log_probs.shape != log_probs.shape:
        raise ValueError("ref_log_probs")
    log_ratio = log_probs - ref_log_probs
    if kind == "k1":
        return log_ratio
    if kind == "k2":
        return 0.5 * log_ratio ** 2
    return torch.exp(-log_ratio) + log_ratio


@mutant("computed from probabilities: exp(log_probs) underflows to 0 for log-probs near -200 (float32), "
        "so the ratio becomes 0 or inf; work with the difference of log-probs instead")
def via_probabilities(log_probs, ref_log_probs, kind="k1"):
    if kind not in ("k1", "k2", "k3"):
        raise ValueError(f"kind {kind!r}")
    if ref_log_probs.shape != log_probs.shape:
        raise ValueError("ref_log_probs")
    ratio = torch.exp(log_probs) / torch.exp(ref_log_probs)
    if kind == "k1":
        return torch.log(ratio)
    if kind == "k2":
        return 0.5 * torch.log(ratio) ** 2
    return 1 / ratio + torch.log(ratio) - 1


@mutant("k3 clamped to [-10, 10] (as some libraries' low_var_kl does): the estimator asked for is unclamped")
def k3_clamped(log_probs, ref_log_probs, kind="k1"):
    if kind not in ("k1", "k2", "k3"):
        raise ValueError(f"kind {kind!r}")
    if ref_log_probs.shape != log_probs.shape:
        raise ValueError("ref_log_probs")
    log_ratio = log_probs - ref_log_probs
    if kind == "k1":
        return log_ratio
    if kind == "k2":
        return 0.5 * log_ratio ** 2
    return torch.clamp(torch.exp(-log_ratio) + log_ratio - 1, min=-10, max=10)


@mutant("an unknown kind silently falls back to k1 instead of raising ValueError")
def unknown_kind_fallback(log_probs, ref_log_probs, kind="k1"):
    if ref_log_probs.shape != log_probs.shape:
        raise ValueError("ref_log_probs")
    log_ratio = log_probs - ref_log_probs
    if kind == "k2":
        return 0.5 * log_ratio ** 2
    if kind == "k3":
        return torch.exp(-log_ratio) + log_ratio - 1
    return log_ratio


@mutant("reduced to a mean: the estimators are per token (elementwise), shaped like the inputs")
def reduced_to_mean(log_probs, ref_log_probs, kind="k1"):
    if kind not in ("k1", "k2", "k3"):
        raise ValueError(f"kind {kind!r}")
    if ref_log_probs.shape != log_probs.shape:
        raise ValueError("ref_log_probs")
    log_ratio = log_probs - ref_log_probs
    if kind == "k1":
        return log_ratio.mean()
    if kind == "k2":
        return (0.5 * log_ratio ** 2).mean()
    return (torch.exp(-log_ratio) + log_ratio - 1).mean()


@mutant("no shape check: a [B, 1] or [T] ref_log_probs silently broadcasts against [B, T] log-probs")
def no_shape_check(log_probs, ref_log_probs, kind="k1"):
    if kind not in ("k1", "k2", "k3"):
        raise ValueError(f"kind {kind!r}")
    log_ratio = log_probs - ref_log_probs
    if kind == "k1":
        return log_ratio
    if kind == "k2":
        return 0.5 * log_ratio ** 2
    return torch.exp(-log_ratio) + log_ratio - 1
