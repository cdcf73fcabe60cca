"""KL penalty estimators; k3 uses a short series where r is tiny."""

import torch


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    if ref_log_probs.shape != log_probs.shape:
        raise ValueError("ref_log_probs does not have the shape of log_probs")
    r = (ref_log_probs - log_probs).flatten()
    if kind not in ("k2", "k3"):
        return -r
    elif kind == "k2":
        return 0.5 * r * r
    elif kind == "k3":
        small = r.abs() < 1e-3
        r_small = torch.where(small, r, torch.zeros_like(r)).detach()
        series = r_small * r_small * (0.5 + r_small * (1 / 6 + r_small * (1 / 24 + r_small / 120)))
        return torch.where(small, series, torch.expm1(r) - r)
    else:
        raise ValueError(f"kind must be 'k1', 'k2' or 'k3', not {kind!r}")


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
