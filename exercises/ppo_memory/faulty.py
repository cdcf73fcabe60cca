"""The `ppo-memory` reference with a switch per catalogued mistake (see exercises/mistakes.py).

``faults=()`` is the reference; each switch is one misconception of mutants.py. Self-contained
(standard library only): a mutant's submitted file is this module plus a wrapper.
"""

import math
import numbers


def _count(name, value, faults=frozenset()):
    """A non-negative integer parameter count (an integral float such as 7e9 is accepted)."""
    if (isinstance(value, bool) and "bool-accepted" not in faults) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")  # the fault: True counts as 1
    if not isinstance(value, numbers.Integral) and not float(value).is_integer():
        raise ValueError(f"{name} must be an integer number of parameters, got {value!r}")
    if "negative-float-accepted" in faults and isinstance(value, float):
        return int(value)  # the sign is checked on the int branch only
    value = int(value)
    if value < 0:
        raise ValueError(f"{name} must be non-negative, got {value}")
    return value


def faulty_ppo_memory(
    actor_params,
    critic_params,
    reward_params,
    reference_params,
    weight_bytes=2,
    grad_bytes=2,
    optimizer_bytes=12,
    num_gpus=1,
    zero_stage=0,
    *,
    faults=frozenset(),
):
    counts = [actor_params, critic_params, reward_params, reference_params]
    if "no-validation" not in faults:
        counts = [
            _count(n, v, faults)
            for n, v in zip(("actor_params", "critic_params", "reward_params", "reference_params"), counts)
        ]
    actor, critic, reward, reference = counts
    weight_bytes = _count("weight_bytes", weight_bytes)
    grad_bytes = _count("grad_bytes", grad_bytes)
    optimizer_bytes = _count("optimizer_bytes", optimizer_bytes)
    num_gpus = _count("num_gpus", num_gpus)
    if num_gpus < 1:
        raise ValueError(f"num_gpus must be at least 1, got {num_gpus}")
    if zero_stage not in (0, 1, 2, 3):
        raise ValueError(f"zero_stage must be 0, 1, 2 or 3, got {zero_stage!r}")
    if "fixed-bytes" in faults:
        weight_bytes, grad_bytes, optimizer_bytes = 2, 2, 12

    def shard(nbytes, sharded):
        if not sharded:
            return nbytes
        if "true-division" in faults:
            return nbytes / num_gpus
        if "float-ceil" in faults:
            return math.ceil(nbytes / num_gpus)
        if "round-down" in faults:
            return nbytes // num_gpus
        return -(-nbytes // num_gpus)

    def at(stage):
        return zero_stage == stage if "non-cumulative-stages" in faults else zero_stage >= stage

    def trainable(params):
        weights_stage = 2 if "weights-sharded-at-stage2" in faults else 3
        grads = 0 if "forget-grads" in faults else shard(params * grad_bytes, at(2))
        return shard(params * weight_bytes, at(weights_stage)) + grads + shard(params * optimizer_bytes, at(1))

    def frozen(params):
        if "frozen-as-trainable" in faults:
            return trainable(params)
        return shard(params * weight_bytes, at(3) and "shard-frozen" in faults)

    ledger = {
        "actor": trainable(actor),
        "critic": trainable(critic),
        "reward": frozen(reward),
        "reference": frozen(reference),
    }
    total = sum(ledger.values())
    ledger["total_per_gpu"] = total * num_gpus if "total-not-per-gpu" in faults else total
    return ledger
