"""The `gae` reference with a switch per catalogued mistake (see exercises/mistakes.py).

``faults=()`` is the reference; each switch is one misconception of mutants.py. Self-contained
(torch only): a mutant's submitted file is this module plus a wrapper.
"""

import contextlib

import torch


def faulty_gae(rewards, values, mask=None, gamma=1.0, lam=0.95, *, faults=frozenset()):
    if "inplace-edit" in faults:  # the values come from a copy; the caller's tensor is edited
        rewards, edited = rewards.clone(), rewards
        edited.data.add_(1)
    if values.shape != rewards.shape and "no-shape-check" not in faults:
        raise ValueError(f"values has shape {tuple(values.shape)}, expected {tuple(rewards.shape)}")
    if mask is not None and mask.shape != rewards.shape and "no-shape-check" not in faults:
        raise ValueError(f"mask has shape {tuple(mask.shape)}, expected {tuple(rewards.shape)}")
    dtype = rewards.dtype
    work = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    attached = "advantages-attached" in faults
    grad = attached or "returns-attached" in faults or "rewards-attached" in faults
    with contextlib.nullcontext() if grad else torch.no_grad():
        # "rewards-attached": values detached, rewards not (their graph reaches both outputs)
        r_raw = rewards.to(work) if "rewards-attached" in faults else rewards.detach().to(work)
        v_graph = values.to(work)
        v_raw = v_graph if attached else v_graph.detach()
        if mask is None:
            valid = torch.ones(r_raw.shape, dtype=torch.bool, device=r_raw.device)
        else:
            valid = mask.to(device=r_raw.device) != 0
        through = "recursion-through-padding" in faults
        r = r_raw if through else torch.where(valid, r_raw, torch.zeros_like(r_raw))
        v = v_raw if through else torch.where(valid, v_raw, torch.zeros_like(v_raw))
        T = r.shape[-1]
        delta_gamma = 1.0 if "delta-without-gamma" in faults else gamma
        columns = [None] * T
        last = torch.zeros_like(r[..., 0])
        steps = range(T) if "forward-recursion" in faults else reversed(range(T))
        for t in steps:
            if "next-value-off-by-one" in faults:
                next_value = v[..., t - 1] if t > 0 else torch.zeros_like(last)
            elif t + 1 < T:
                next_value = v_raw[..., t + 1] if "bootstrap-from-padding" in faults else v[..., t + 1]
            else:
                next_value = torch.zeros_like(last)  # V_{t+1}: 0 after the last valid token
            delta = r[..., t] + delta_gamma * next_value - v[..., t]
            last = delta + (lam if "trace-without-gamma" in faults else gamma * lam) * last
            if not through:
                last = torch.where(valid[..., t], last, torch.zeros_like(last))
            columns[t] = last
        advantages = torch.stack(columns, dim=-1)
        if through:
            advantages = torch.where(valid, advantages, torch.zeros_like(advantages))
        if "returns-as-reward-to-go" in faults:
            to_go = [None] * T
            g = torch.zeros_like(last)
            for t in reversed(range(T)):
                g = torch.where(valid[..., t], r[..., t] + gamma * g, torch.zeros_like(g))
                to_go[t] = g
            returns = torch.stack(to_go, dim=-1)
        elif "returns-not-masked" in faults:
            returns = advantages + v_raw
        else:
            carried = v_graph if "returns-attached" in faults else v
            total = advantages - carried if "returns-minus-values" in faults else advantages + carried
            returns = torch.where(valid, total, torch.zeros_like(v))
        if "whitened-advantages" in faults:
            n = valid.sum().clamp(min=2)
            m = valid.to(advantages.dtype)
            mean = (advantages * m).sum() / n
            var = (((advantages - mean) * m) ** 2).sum() / (n - 1)
            advantages = (advantages - mean) * torch.rsqrt(var + 1e-8) * m
    if mask is None and "mask-none-dtype" in faults:
        return advantages, returns  # the mask=None path forgets to cast back
    return _dtype_fault((advantages.to(dtype), returns.to(dtype)), faults)


def _dtype_fault(out, faults):
    """The "wrong-dtype" switch: every result cast to float32, whatever the inputs' dtype."""
    if "wrong-dtype" not in faults:
        return out
    return tuple(t.float() for t in out) if isinstance(out, tuple) else out.float()
