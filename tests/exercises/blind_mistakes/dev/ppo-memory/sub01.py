"""Exercise ppo-memory: how many bytes each GPU holds for the four models of PPO."""


def _count(name, value):
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a parameter count, not a bool")
    if isinstance(value, int):
        count = value
    elif isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"{name}={value!r} is not a whole number of parameters")
        count = int(value)
    else:
        raise ValueError(f"{name} must be an int or an integral float, got {type(value).__name__}")
    if count < 0:
        raise ValueError(f"{name}={value!r} is negative")
    return count


def _ceil_div(a, b):
    return int(a / b) + (a % b > 0)


def estimate_ppo_memory(actor_params, critic_params, reward_params, reference_params, weight_bytes=2, grad_bytes=2,
                        optimizer_bytes=12, num_gpus=1, zero_stage=0):
    actor = _count("actor_params", actor_params)
    critic = _count("critic_params", critic_params)
    reward = _count("reward_params", reward_params)
    reference = _count("reference_params", reference_params)
    if num_gpus < 1:
        raise ValueError(f"num_gpus must be >= 1, got {num_gpus}")
    if zero_stage not in (0, 1, 2, 3):
        raise ValueError(f"zero_stage must be 0, 1, 2 or 3, got {zero_stage}")

    def trainable(n):
        w = n * weight_bytes
        g = n * grad_bytes
        o = n * optimizer_bytes
        if zero_stage >= 1:
            o = _ceil_div(o, num_gpus)
        if zero_stage >= 2:
            g = _ceil_div(g, num_gpus)
        if zero_stage >= 3:
            w = _ceil_div(w, num_gpus)
        return w + g + o

    result = {
        "actor": trainable(actor),
        "critic": trainable(critic),
        "reward": reward * weight_bytes,
        "reference": reference * weight_bytes,
    }
    result["total_per_gpu"] = sum(result.values())
    return result


if __name__ == "__main__":
    # The chapter's 7B Actor / 7B Critic / 3B Reward Model / 7B Reference on one GPU.
    got = estimate_ppo_memory(7_000_000_000, 7_000_000_000, 3_000_000_000, 7_000_000_000)
    assert got == {"actor": 112 * 10**9, "critic": 112 * 10**9, "reward": 6 * 10**9, "reference": 14 * 10**9,
                   "total_per_gpu": 244 * 10**9}, got
    assert all(type(v) is int for v in got.values())
    # The same on 8 GPUs with ZeRO stage 3: 7e9 * 16 / 8 = 14e9 for each trainable model.
    got = estimate_ppo_memory(7_000_000_000, 7_000_000_000, 3_000_000_000, 7_000_000_000, num_gpus=8, zero_stage=3)
    assert got == {"actor": 14 * 10**9, "critic": 14 * 10**9, "reward": 6 * 10**9, "reference": 14 * 10**9,
                   "total_per_gpu": 48 * 10**9}, got
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
