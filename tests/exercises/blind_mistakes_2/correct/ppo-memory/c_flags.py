"""How much memory PPO needs per GPU (no activations), with ZeRO sharding."""


def _as_int(name, value):
    if isinstance(value, bool):
        raise ValueError(f"{name} cannot be a bool")
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")) or value != round(value):
            raise ValueError(f"{name} must be integral, got {value}")
        value = int(value)
    if not isinstance(value, int):
        raise ValueError(f"{name} must be an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be non-negative, got {value}")
    return value


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
    actor_params = _as_int("actor_params", actor_params)
    critic_params = _as_int("critic_params", critic_params)
    reward_params = _as_int("reward_params", reward_params)
    reference_params = _as_int("reference_params", reference_params)
    weight_bytes = _as_int("weight_bytes", weight_bytes)
    grad_bytes = _as_int("grad_bytes", grad_bytes)
    optimizer_bytes = _as_int("optimizer_bytes", optimizer_bytes)
    num_gpus = _as_int("num_gpus", num_gpus)
    if num_gpus < 1:
        raise ValueError("num_gpus must be >= 1")
    if zero_stage not in (0, 1, 2, 3):
        raise ValueError("zero_stage must be 0, 1, 2 or 3")

    shard_optimizer = zero_stage >= 1
    shard_grads = zero_stage >= 2
    shard_weights = zero_stage >= 3

    def per_gpu(nbytes, sharded):
        return -(-nbytes // num_gpus) if sharded else nbytes

    def trained(params):
        return (
            per_gpu(params * weight_bytes, shard_weights)
            + per_gpu(params * grad_bytes, shard_grads)
            + per_gpu(params * optimizer_bytes, shard_optimizer)
        )

    actor = trained(actor_params)
    critic = trained(critic_params)
    reward = reward_params * weight_bytes
    reference = reference_params * weight_bytes
    return {
        "actor": actor,
        "critic": critic,
        "reward": reward,
        "reference": reference,
        "total_per_gpu": actor + critic + reward + reference,
    }


if __name__ == "__main__":
    # The chapter's 7B Actor / 7B Critic / 3B Reward Model / 7B Reference on one GPU.
    got = estimate_ppo_memory(7_000_000_000, 7_000_000_000, 3_000_000_000, 7_000_000_000)
    assert got == {
        "actor": 112 * 10**9,
        "critic": 112 * 10**9,
        "reward": 6 * 10**9,
        "reference": 14 * 10**9,
        "total_per_gpu": 244 * 10**9,
    }, got
    assert all(type(v) is int for v in got.values())
    # The same on 8 GPUs with ZeRO stage 3: 7e9 * 16 / 8 = 14e9 for each trainable model.
    got = estimate_ppo_memory(7_000_000_000, 7_000_000_000, 3_000_000_000, 7_000_000_000, num_gpus=8, zero_stage=3)
    assert got == {
        "actor": 14 * 10**9,
        "critic": 14 * 10**9,
        "reward": 6 * 10**9,
        "reference": 14 * 10**9,
        "total_per_gpu": 48 * 10**9,
    }, got
    # Tiny models, 4 GPUs, ZeRO stage 1: actor 5 params = 10 + 10 + ceil(60 / 4) = 35 bytes;
    # critic 3 params = 6 + 6 + ceil(36 / 4) = 21; reward 2 params = 4; reference 5 params = 10.
    got = estimate_ppo_memory(5, 3, 2, 5, num_gpus=4, zero_stage=1)
    assert got == {"actor": 35, "critic": 21, "reward": 4, "reference": 10, "total_per_gpu": 70}, got
    # Rounding up: 1 param with 2-byte weights over 4 GPUs at stage 3 is ceil(2 / 4) = 1 byte per GPU.
    got = estimate_ppo_memory(1, 0, 0, 0, num_gpus=4, zero_stage=3)
    assert got["actor"] == 1 + 1 + 3, got
    for bad in (-1, 7.5):
        try:
            estimate_ppo_memory(bad, 1, 1, 1)
        except ValueError:
            pass
        else:
            raise AssertionError(f"actor_params={bad!r} must raise ValueError")
    print("self-tests passed")
