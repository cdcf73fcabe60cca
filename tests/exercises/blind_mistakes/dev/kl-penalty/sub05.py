"""Exercise kl-penalty: the k1, k2 and k3 per-token KL estimators."""

import torch


class _K3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, log_probs, ref_log_probs):
        r = ref_log_probs - log_probs
        e = torch.expm1(r)
        ctx.save_for_backward(e)
        return e - r

    @staticmethod
    def backward(ctx, grad_out):
        (e,) = ctx.saved_tensors
        # d/d log_probs of exp(r) - r - 1 with r = ref - log_probs: -exp(r) + 1 = -expm1(r)
        return grad_out * e, -grad_out * e


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    if kind not in {"k1", "k2", "k3"}:
        raise ValueError(f"kind={kind!r} is unknown")
    if ref_log_probs.shape != log_probs.shape:
        raise ValueError("ref_log_probs does not match log_probs' shape")
    if kind == "k3":
        return _K3.apply(log_probs, ref_log_probs)
    diff = ref_log_probs.neg_().add_(log_probs)
    return diff if kind == "k1" else diff * diff * 0.5


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
