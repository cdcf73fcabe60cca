"""Hidden reference solution for `ppo-memory`. Never sent to the jail."""

import numbers


def _count(name, value):
    """A non-negative integer parameter count (an integral float such as 7e9 is accepted)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    if not isinstance(value, numbers.Integral):
        if not float(value).is_integer():
            raise ValueError(f"{name} must be an integer number of parameters, got {value!r}")
    value = int(value)
    if value < 0:
        raise ValueError(f"{name} must be non-negative, got {value}")
    return value


def _shard(nbytes, num_gpus, sharded):
    """Bytes held per GPU: divided by num_gpus and rounded up when sharded."""
    return -(-nbytes // num_gpus) if sharded else nbytes


def estimate_ppo_memory(
    actor_params,
    critic_params,
    reward_params,
    reference_params,
    weight_bytes=2,
    grad_bytes=2,
    optimizer_bytes=12,
    num_gpus=1,
    zero_stage=0,
):
    actor = _count("actor_params", actor_params)
    critic = _count("critic_params", critic_params)
    reward = _count("reward_params", reward_params)
    reference = _count("reference_params", reference_params)
    weight_bytes = _count("weight_bytes", weight_bytes)
    grad_bytes = _count("grad_bytes", grad_bytes)
    optimizer_bytes = _count("optimizer_bytes", optimizer_bytes)
    num_gpus = _count("num_gpus", num_gpus)
    if num_gpus < 1:
        raise ValueError(f"num_gpus must be at least 1, got {num_gpus}")
    if zero_stage not in (0, 1, 2, 3):
        raise ValueError(f"zero_stage must be 0, 1, 2 or 3, got {zero_stage!r}")

    def trainable(params):
        return (
            _shard(params * weight_bytes, num_gpus, zero_stage >= 3)
            + _shard(params * grad_bytes, num_gpus, zero_stage >= 2)
            + _shard(params * optimizer_bytes, num_gpus, zero_stage >= 1)
        )

    ledger = {
        "actor": trainable(actor),
        "critic": trainable(critic),
        "reward": reward * weight_bytes,
        "reference": reference * weight_bytes,
    }
    ledger["total_per_gpu"] = sum(ledger.values())
    return ledger
