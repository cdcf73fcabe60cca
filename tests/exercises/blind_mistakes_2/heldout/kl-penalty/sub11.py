"""The three KL estimators of Schulman's note, looked up by name."""

import torch

_ESTIMATORS = {
    "k1": lambda d: d,
    "k2": lambda d: d.square(),
    "k3": lambda d: torch.exp(-d) - 1 + d,
}


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    """Elementwise KL estimate; d = log_probs - ref_log_probs."""
    if not isinstance(kind, str) or kind not in _ESTIMATORS:
        raise ValueError(f"kind must be one of {sorted(_ESTIMATORS)}, got {kind!r}")
    d = log_probs - ref_log_probs.detach()
    return _ESTIMATORS[kind](d)


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
