"""Exercise kl-penalty: the k1, k2 and k3 per-token KL estimators."""

import torch

_ALIASES = {"k1": "kl", "k2": "mse", "k3": "low_var_kl"}


def kl_penalty(logprob, ref_logprob, kl_penalty):
    if kl_penalty == "kl":
        return (logprob - ref_logprob).detach()
    if kl_penalty == "mse":
        return 0.5 * (logprob - ref_logprob).square()
    if kl_penalty == "low_var_kl":
        kl = torch.clamp(ref_logprob - logprob, min=-20, max=20)
        # exp(kl) - kl - 1, with exp(kl) - 1 computed by expm1 so small kl does not round to 0
        return torch.clamp(torch.expm1(kl) - kl, min=-10, max=10)
    raise NotImplementedError


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    if not isinstance(kind, str) or kind not in _ALIASES:
        raise ValueError(f"kind {kind!r} is not supported (use 'k1', 'k2' or 'k3')")
    return kl_penalty(log_probs, ref_log_probs, _ALIASES[kind])


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
