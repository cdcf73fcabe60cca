import torch


class _KL:
    kinds = ("k1", "k2", "k3")

    def __init__(self, kind):
        if kind not in self.kinds:
            raise ValueError("unknown estimator kind: " + repr(kind))
        self.kind = kind

    def __call__(self, lp, ref):
        log_ratio = lp - ref
        if self.kind == "k1":
            return log_ratio
        if self.kind == "k2":
            return 0.5 * log_ratio.square()
        neg = ref - lp
        return torch.expm1(neg) - neg


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    estimator = _KL(kind)
    if ref_log_probs.shape != log_probs.shape:
        raise ValueError("ref_log_probs shape {} does not match log_probs shape {}".format(
            list(ref_log_probs.shape), list(log_probs.shape)))
    return estimator(log_probs, ref_log_probs)
