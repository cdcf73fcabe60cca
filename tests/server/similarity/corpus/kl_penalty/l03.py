import torch


def compute_kl_penalty(log_probs, ref_log_probs, kind="k1"):
    # Validate arguments first so that nothing is computed for bad input.
    valid_kinds = ["k1", "k2", "k3"]
    if not isinstance(kind, str) or kind not in valid_kinds:
        raise ValueError("kind=%r is not supported; use one of %s" % (kind, valid_kinds))
    if log_probs.size() != ref_log_probs.size():
        raise ValueError("log_probs and ref_log_probs differ in size: %s != %s"
                         % (list(log_probs.size()), list(ref_log_probs.size())))

    # r is log(p / q) with p the policy and q the reference
    r = torch.sub(log_probs, ref_log_probs)
    match kind:
        case "k1":
            kl = r
        case "k2":
            kl = torch.mul(torch.square(r), 0.5)
        case _:
            # exp(-r) - 1 computed without cancellation, then + r
            kl = torch.add(torch.expm1(torch.neg(r)), r)
    return kl
