"""Style: k3 by torch.where between a Taylor series (|r| < 1e-3) and expm1(r) - r; k1/k2 inline."""

import torch


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    if not isinstance(kind, str) or kind not in {"k1", "k2", "k3"}:
        raise ValueError(f"unknown kind {kind!r}: use 'k1', 'k2' or 'k3'")
    if log_probs.shape != ref_log_probs.shape:
        raise ValueError(f"ref_log_probs has shape {tuple(ref_log_probs.shape)}, expected {tuple(log_probs.shape)}")
    diff = log_probs - ref_log_probs
    if kind == "k1":
        return diff
    if kind == "k2":
        return 0.5 * diff * diff
    r = -diff
    small = r.abs() < 1e-3
    # e^r - r - 1 = r^2/2 + r^3/6 + r^4/24 + r^5/120 + ...: the series is exact to float64 below
    # 1e-3, where expm1(r) - r still cancels; both branches stay finite everywhere they are evaluated.
    rs = torch.where(small, r, torch.zeros_like(r))
    series = rs * rs * (0.5 + rs * (1.0 / 6 + rs * (1.0 / 24 + rs / 120)))
    return torch.where(small, series, torch.expm1(r) - r)


if __name__ == "__main__":
    import math

    lp, ref = torch.tensor([-1.0, -2.0]), torch.tensor([-2.0, -1.0])
    assert torch.allclose(compute_kl_penalty(lp, ref, "k3"), torch.tensor([math.exp(-1.0), math.e - 2.0]))
    tiny = compute_kl_penalty(torch.tensor([0.0], dtype=torch.float64), torch.tensor([1e-5], dtype=torch.float64), "k3")
    assert abs(tiny.item() - (math.expm1(1e-5) - 1e-5)) < 1e-20, tiny
    assert torch.equal(compute_kl_penalty(lp, lp, "k2"), torch.zeros(2))
    print("self-tests passed")
