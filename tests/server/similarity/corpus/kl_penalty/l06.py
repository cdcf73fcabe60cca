from torch import expm1


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    shape_a, shape_b = list(log_probs.shape), list(ref_log_probs.shape)
    assert_same = shape_a == shape_b
    if not assert_same:
        raise ValueError(f"expected ref_log_probs of shape {shape_a}, got {shape_b}")
    if kind == "k3":
        x = ref_log_probs - log_probs
        return expm1(x) - x
    if kind == "k2":
        return 0.5 * (log_probs - ref_log_probs).pow(2)
    if kind == "k1":
        return log_probs - ref_log_probs
    raise ValueError("bad kind: %s" % (kind,))
