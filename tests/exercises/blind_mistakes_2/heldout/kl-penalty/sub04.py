"""Exercise kl-penalty: the k1, k2 and k3 per-token KL estimators."""

import torch


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    """Per-token estimate of KL(policy || reference), elementwise.

    Args:
        log_probs: log-probabilities of the sampled tokens under the policy, any shape.
        ref_log_probs: the same under the reference model; same shape.
        kind: which estimator:
            "k1": log_probs - ref_log_probs (unbiased, can be negative);
            "k2": 0.5 * (log_probs - ref_log_probs)^2;
            "k3": exp(ref_log_probs - log_probs) - (ref_log_probs - log_probs) - 1
                  (unbiased and never negative).

    Returns:
        A tensor shaped like log_probs, in its dtype and device, differentiable with respect
        to log_probs. It must stay finite and exact when log-probs are as low as -200: work
        with log-probs (differences), never with probabilities exp(log_probs). For nearly
        equal log-probs k3 is accurate only through expm1: exp(r) - r - 1 rounds to 0 in
        float32 for |r| < 1e-4, torch.expm1(r) - r does not.

    Raises:
        ValueError for an unknown kind, or naming ref_log_probs when the shapes differ (no
        broadcasting).
    Must not modify its inputs in place.

    Graded (points in brackets; * counts only once the values on ordinary inputs are right):
        - k1 = log_probs - ref_log_probs (and k1 is the default kind) [12]
        - k2 = 0.5 * (log_probs - ref_log_probs)^2 [12]
        - k3 = exp(ref - log_probs) - (ref - log_probs) - 1 [14]
        - large and tiny log-ratios (log-probs down to -200; |r| below 1e-4 for k3, float32): finite and
          exact; k3 for |r| < 1e-4 is compared within 3e-2 relative: exp(r) - r - 1 rounds to 0 in float32,
          torch.expm1(r) - r does not [14]
        - gradient with respect to log_probs; the only gradient graded [10]
        - any leading shape (0-D, 1-D, 3-D, 4-D inputs), elementwise [6]
        - ValueError for an unknown kind [10*]
        - ValueError on mismatched shapes (no broadcasting) [8*]
        - result in the inputs' dtype (float32, float64, bfloat16) and device, shaped like the inputs [8*]
        - inputs not modified in place [6*]

    Tolerance: values and gradients are compared with the reference per dtype: float64 within 1e-10
    relative (+1e-12 absolute), float32 within 1e-4 relative + 1e-5 absolute, bfloat16 within 2e-2
    relative + 2e-2 absolute.
    """
    if kind not in {"k1", "k2", "k3"}:
        raise ValueError(f"unknown kind {kind!r}: expected 'k1', 'k2' or 'k3'")
    if ref_log_probs.shape != log_probs.shape:
        raise ValueError(f"ref_log_probs has shape {tuple(ref_log_probs.shape)}, log_probs has {tuple(log_probs.shape)}")

    log_ratio = log_probs - ref_log_probs
    if kind == "k1":
        return log_ratio
    if kind == "k2":
        return 0.5 * log_ratio**2
    r = -log_ratio
    return torch.expm1(r) - r


if __name__ == "__main__":
    import math

    lp, ref = torch.tensor([-1.0, -2.0]), torch.tensor([-2.0, -1.0])  # log-ratios +1 and -1
    assert torch.allclose(compute_kl_penalty(lp, ref), torch.tensor([1.0, -1.0]))  # k1 is the default
    assert torch.allclose(compute_kl_penalty(lp, ref, "k2"), torch.tensor([0.5, 0.5]))
    # k3: ref - lp = -1 gives e^-1 + 1 - 1; ref - lp = +1 gives e - 1 - 1
    k3 = compute_kl_penalty(lp, ref, "k3")
    assert torch.allclose(k3, torch.tensor([math.exp(-1.0), math.e - 2.0])), k3
    # Identical distributions: every estimator is 0.
    for kind in ("k1", "k2", "k3"):
        assert torch.allclose(compute_kl_penalty(lp, lp, kind), torch.zeros(2)), kind
    # Large gap: the policy likes a token the reference gives log-prob -200. k3 = e^-199.5 + 199.5 - 1.
    k3 = compute_kl_penalty(torch.tensor([-0.5]), torch.tensor([-200.0]), "k3")
    assert torch.isfinite(k3).all() and torch.isclose(k3, torch.tensor([198.5])), k3
    try:
        compute_kl_penalty(lp, ref, "k4")
    except ValueError:
        pass
    else:
        raise AssertionError("an unknown kind must raise ValueError")
    print("self-tests passed")
