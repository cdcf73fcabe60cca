"""The `actor-loss` reference with a switch per catalogued mistake (see exercises/mistakes.py).

``faults=()`` is the reference; each switch is one misconception of mutants.py. Self-contained
(torch only): a mutant's submitted file is this module plus a wrapper.
"""

import torch


def faulty_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2, *, faults=frozenset()):
    if "no-shape-check" not in faults:
        if log_probs_old.shape != log_probs_new.shape:
            raise ValueError(
                f"log_probs_old has shape {tuple(log_probs_old.shape)}, expected {tuple(log_probs_new.shape)}"
            )
        if advantages.shape != log_probs_new.shape:
            raise ValueError(f"advantages has shape {tuple(advantages.shape)}, expected {tuple(log_probs_new.shape)}")
    new = log_probs_new.detach() if "detached-ratio" in faults else log_probs_new
    if "inverted-ratio" in faults:
        ratio = torch.exp(log_probs_old - new)
    elif "ratio-without-exp" in faults:
        ratio = new - log_probs_old
    else:
        ratio = torch.exp(new - log_probs_old)
    low, high = 1.0 - clip_range, 1.0 + clip_range
    if "fixed-clip" in faults:
        low, high = 0.8, 1.2
    if "clip-advantage" in faults:
        pg_loss1 = ratio * advantages
        pg_loss2 = ratio * torch.clamp(advantages, low, high)
    else:
        # "detached-clipped-branch": the clamp sees a detached ratio (the values are the same)
        inner = ratio.detach() if "detached-clipped-branch" in faults else ratio
        clipped = torch.clamp(inner, max=high) if "one-sided-clip" in faults else torch.clamp(inner, low, high)
        if "no-clip" in faults:
            clipped = ratio
        elif "clipped-grad-leak" in faults:
            clipped = ratio * (clipped / ratio).detach()  # the clipped value, with the unclipped gradient
        # "detached-unclipped-branch": the unclipped term is built from a detached ratio
        pg_loss1 = (ratio.detach() if "detached-unclipped-branch" in faults else ratio) * advantages
        pg_loss2 = clipped * advantages
    if "inplace-edit" in faults:
        log_probs_old.sub_(0.5)  # after the ratio: the values are right, the caller's tensor is not
    per_element = torch.max(pg_loss1, pg_loss2) if "max-for-min" in faults else torch.min(pg_loss1, pg_loss2)
    if "missing-minus" not in faults:
        per_element = -per_element
    if "no-reduction" in faults:
        return _dtype_fault(per_element, faults)
    if "sum-not-mean" in faults:
        return _dtype_fault(per_element.sum(), faults)
    return _dtype_fault(per_element.mean(), faults)


def _dtype_fault(out, faults):
    """The "wrong-dtype" switch: every result cast to float32, whatever the inputs' dtype."""
    if "wrong-dtype" not in faults:
        return out
    return tuple(t.float() for t in out) if isinstance(out, tuple) else out.float()
