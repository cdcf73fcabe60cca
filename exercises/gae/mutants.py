"""Known mistakes of `gae`: switches of the faulty reference (faulty.py), and one memory mutant.

``explains`` lists the checks each mistake can make fail; tests hold every single-fault mutant
to it over many seeds. The memory mutant is hand-written: right values, an O(T^2) intermediate.
"""

import torch

from exercises.gae.faulty import faulty_gae
from exercises.mistakes import fault, fault_mutants, inplace_edit_fault, mutant, wrong_dtype_fault

ADV = ("advantages_default", "hyper", "no_bootstrap_from_padding", "edge_rows", "no_mask", "dtype_device")
RET = ("returns_default", "hyper", "no_bootstrap_from_padding", "edge_rows", "no_mask", "dtype_device")
BOTH = tuple(dict.fromkeys(ADV + RET + ("zero_at_padding",)))

FAULTS = [
    fault(
        "bootstrap-from-padding",
        "bootstrapping from padding: V_{t+1} after the last valid token must be 0, "
        "not the value stored at the padded position",
        fix="Use V_{t+1} = 0 after each row's last valid token (mask the values before the recursion).",
        explains=BOTH,
        site="bootstrap",
    ),
    fault(
        "recursion-through-padding",
        "recursion through padding: the mask is applied only to the outputs, so "
        "padded rewards and values leak into the last valid tokens",
        fix="Zero rewards and values at padded positions and reset the running advantage there, inside the loop.",
        explains=BOTH,
        site="recursion-mask",
    ),
    fault(
        "returns-not-masked",
        "returns not masked: returns = advantages + values leaves the garbage values at padded positions instead of 0",
        fix="Set returns to 0 where mask is 0: torch.where(mask, advantages + values, 0).",
        explains=RET + ("zero_at_padding",),
        site="returns",
    ),
    fault(
        "returns-attached",
        "returns still carry gradient into the critic: returns = advantages + values with values not detached",
        fix="Detach values (or compute under torch.no_grad()) before returns = advantages + values.",
        explains=("detached",),
        site="returns-grad",
    ),
    fault(
        "advantages-attached",
        "advantages still carry gradient into the critic: values are used without .detach() or torch.no_grad()",
        fix="Compute GAE under torch.no_grad() or on values.detach(): both outputs are targets, not graphs.",
        explains=("detached",),
        site="grad",
    ),
    fault(
        "returns-as-reward-to-go",
        "returns as the discounted reward-to-go (Monte Carlo) instead of advantages + values (the lambda-return)",
        fix="returns = advantages + values (the lambda-return), not the discounted sum of rewards.",
        explains=RET + ("zero_at_padding",),
        site="returns",
    ),
    fault(
        "forward-recursion",
        "recursion run forwards in time: A_t accumulates the past (A_{t-1}) instead of the future (A_{t+1})",
        fix="Loop t from T - 1 down to 0: A_t = delta_t + gamma * lam * A_{t+1}.",
        explains=BOTH,
        site="direction",
    ),
    fault(
        "delta-without-gamma",
        "gamma missing from the TD error: delta_t = r_t + V_{t+1} - V_t instead of r_t + gamma * V_{t+1} - V_t",
        fix="delta_t = r_t + gamma * V_{t+1} - V_t: discount the next value too.",
        explains=("hyper", "edge_rows", "no_bootstrap_from_padding", "no_mask"),
        site="delta",
    ),
    fault(
        "whitened-advantages",
        "whitening inside GAE: the advantages come back normalised, but GAE returns the "
        "raw advantages (whiten later, separately)",
        fix="Return the raw advantages; whitening is a separate step (masked_whiten).",
        explains=ADV + ("zero_at_padding",),
        site="whiten",
    ),
    fault(
        "mask-none-dtype",
        "results in float32 when mask=None: the path without a mask computes in float32 (a "
        "float32 mask of ones, or an upcast) and never casts back to the inputs' dtype",
        fix="Cast both outputs back to the inputs' dtype on every path, mask=None included.",
        explains=("dtype_device",),
        site="dtype",
    ),
    inplace_edit_fault("rewards"),
    wrong_dtype_fault(),
    fault(
        "no-shape-check",
        "no shape check: a mask or values of another shape silently broadcasts (or fails "
        "with a RuntimeError) instead of raising ValueError",
        fix="Raise ValueError naming the argument when values or mask differ in shape from rewards.",
        explains=("shape_errors",),
        site="shape",
        signature="no-value-error",
    ),
    fault(
        "next-value-off-by-one",
        "the next value shifted the wrong way: V_{t-1} instead of V_{t+1} in the TD error",
        fix="delta_t = r_t + gamma * V_{t+1} - V_t, with V_{t+1} = 0 after the last valid token.",
        explains=(
            "advantages_default",
            "returns_default",
            "hyper",
            "no_bootstrap_from_padding",
            "edge_rows",
            "no_mask",
            "dtype_device",
        ),
        site="next-value",
    ),
    fault(
        "trace-without-gamma",
        "gamma missing from the trace: A_t = delta_t + lam * A_{t+1} instead of gamma * lam * A_{t+1}",
        fix="Carry the advantage back with gamma * lam: A_t = delta_t + gamma * lam * A_{t+1}.",
        explains=("hyper", "edge_rows", "no_bootstrap_from_padding", "no_mask"),
        site="trace",
    ),
    fault(
        "returns-minus-values",
        "returns = advantages - values: the returns are advantages + values",
        fix="returns = advantages + values (zero at padding).",
        explains=("returns_default", "hyper", "edge_rows", "no_mask", "dtype_device", "no_bootstrap_from_padding"),
        site="returns",
    ),
]

# Built last (issue 37), so the catalogue's earlier mistakes keep their order.
FAULTS += [
    fault(
        "rewards-attached",
        "the outputs still carry gradient into rewards: values are detached, but rewards are used as "
        "they come, so when rewards requires grad both advantages and returns do",
        fix="Compute GAE under torch.no_grad() (or detach rewards as well as values): the outputs never require grad.",
        explains=("detached",),
        site="rewards-grad",
    ),
]

MUTANTS = fault_mutants(faulty_gae, FAULTS)


@mutant(
    "an O(T^2) discount matrix: right values, but a [T, T] intermediate where a backward loop needs O(T)",
    memory=True,
    explains=("memory",),
    fix="Run the recursion backwards over t with O(B) state; never build a [T, T] discount matrix.",
)
def discount_matrix(rewards, values, mask=None, gamma=1.0, lam=0.95):
    if values.shape != rewards.shape or (mask is not None and mask.shape != rewards.shape):
        raise ValueError("shapes differ")
    with torch.no_grad():
        m = torch.ones_like(rewards) if mask is None else mask.to(rewards.dtype)
        r, v = rewards * m, values * m
        next_v = torch.cat([v[:, 1:], torch.zeros_like(v[:, :1])], dim=1)
        delta = (r + gamma * next_v - v) * m
        T = rewards.shape[-1]
        idx = torch.arange(T, device=rewards.device)
        power = (idx[None, :] - idx[:, None]).to(rewards.dtype)
        discount = torch.where(power >= 0, (gamma * lam) ** power.clamp(min=0), torch.zeros_like(power))
        adv = (delta @ discount.t()) * m
        return adv, (adv + v) * m
