"""The `kl-penalty` reference with a switch per catalogued mistake (see exercises/mistakes.py).

``faults=()`` is the reference; each switch is one misconception of mutants.py. Self-contained
(torch only): a mutant's submitted file is this module plus a wrapper.
"""

import torch


def faulty_kl_penalty(log_probs, ref_log_probs, kind="k1", *, faults=frozenset()):
    if "inplace-edit" in faults:  # the values come from a copy; the caller's tensor is edited
        ref_log_probs, edited = ref_log_probs.clone(), ref_log_probs
        edited.data.add_(1)
    kinds = ("k1", "k2", "k3")
    if "unknown-kind-fallback" not in faults and kind not in kinds:
        raise ValueError(f"kind must be one of {kinds}, got {kind!r}")
    if "no-shape-check" not in faults and tuple(ref_log_probs.shape) != tuple(log_probs.shape):
        raise ValueError(f"ref_log_probs has shape {tuple(ref_log_probs.shape)}, expected {tuple(log_probs.shape)}")
    if "via-probabilities" in faults:
        log_ratio = torch.log(torch.exp(log_probs) / torch.exp(ref_log_probs))
    else:
        log_ratio = log_probs - ref_log_probs
    if kind == "k2":
        out = (1.0 if "k2-missing-half" in faults else 0.5) * log_ratio**2
    elif kind == "k3":
        d = log_ratio if "k3-inverted-ratio" in faults else -log_ratio
        if "via-probabilities" in faults:
            out = torch.exp(ref_log_probs) / torch.exp(log_probs) - d - 1
        elif "k3-without-expm1" in faults:
            out = torch.exp(d) - d - 1
        else:
            out = torch.expm1(d) - d
        if "k3-missing-one" in faults:
            out = out + 1
        if "k3-clamped" in faults:
            out = torch.clamp(out, min=-10, max=10)
    else:
        out = -log_ratio if "k1-wrong-sign" in faults else log_ratio
        if "k1-detached" in faults:
            out = out.detach()
    return _dtype_fault(out.mean() if "reduced-to-mean" in faults else out, faults)


def _dtype_fault(out, faults):
    """The "wrong-dtype" switch: every result cast to float32, whatever the inputs' dtype."""
    if "wrong-dtype" not in faults:
        return out
    return tuple(t.float() for t in out) if isinstance(out, tuple) else out.float()
