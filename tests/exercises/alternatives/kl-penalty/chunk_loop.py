"""Style: a loop over rows of a 2-D view, each estimator computed row by row and stacked back."""

import torch


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    if kind not in ("k1", "k2", "k3"):
        raise ValueError(f"kind must be one of 'k1', 'k2', 'k3' (got {kind!r})")
    if ref_log_probs.shape != log_probs.shape:
        raise ValueError("ref_log_probs must have the shape of log_probs")
    width = log_probs.shape[-1] if log_probs.dim() else 1
    rows_lp = log_probs.reshape(-1, width)
    rows_ref = ref_log_probs.reshape(-1, width)
    out = []
    for lp, ref in zip(rows_lp, rows_ref):
        log_ratio = lp - ref
        if kind == "k1":
            out.append(log_ratio)
        elif kind == "k2":
            out.append(log_ratio.square() / 2)
        else:
            out.append(torch.expm1(-log_ratio) + log_ratio)
    if not out:
        return torch.empty_like(log_probs)
    return torch.stack(out).reshape(log_probs.shape)


if __name__ == "__main__":
    import math

    lp, ref = torch.tensor([[-1.0, -2.0]]), torch.tensor([[-2.0, -1.0]])
    assert torch.allclose(compute_kl_penalty(lp, ref), torch.tensor([[1.0, -1.0]]))
    assert torch.allclose(compute_kl_penalty(lp, ref, "k3"), torch.tensor([[math.exp(-1.0), math.e - 2.0]]))
    assert compute_kl_penalty(torch.tensor(-1.0), torch.tensor(-1.0), "k2").shape == ()
    print("self-tests passed")
