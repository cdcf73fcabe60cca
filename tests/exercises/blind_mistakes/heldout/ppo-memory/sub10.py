"""Exercise ppo-memory: how many bytes each GPU holds for the four models of PPO."""

_SHARDED_FROM = {"optimizer": 1, "grads": 2, "weights": 3}
_STAGES = (0, 1, 2, 3)


def _as_count(name, x):
    if type(x) is bool or not isinstance(x, (int, float)):
        raise ValueError(f"{name}: {x!r} is not a parameter count")
    if isinstance(x, float) and not x.is_integer():
        raise ValueError(f"{name}: {x!r} is fractional")
    if x < 0:
        raise ValueError(f"{name}: {x!r} is negative")
    return int(x)


def estimate_ppo_memory(actor_params, critic_params, reward_params, reference_params, weight_bytes=2, grad_bytes=2,
                        optimizer_bytes=12, num_gpus=1, zero_stage=0):
    counts = {
        "actor": _as_count("actor_params", actor_params),
        "critic": _as_count("critic_params", critic_params),
        "reward": _as_count("reward_params", reward_params),
        "reference": _as_count("reference_params", reference_params),
    }
    if num_gpus < 1:
        raise ValueError("num_gpus must be at least 1")
    if zero_stage not in _STAGES:
        raise ValueError(f"zero_stage must be one of {_STAGES}")

    per_param = {"weights": weight_bytes, "grads": grad_bytes, "optimizer": optimizer_bytes}
    trains = {"actor": True, "critic": False, "reward": False, "reference": False}
    ledger = {}
    for model, n in counts.items():
        total = 0
        for quantity, nbytes in per_param.items():
            if not trains[model] and quantity != "weights":
                continue
            b = n * nbytes
            if trains[model] and zero_stage >= _SHARDED_FROM[quantity]:
                b = (b + num_gpus - 1) // num_gpus
            total += b
        ledger[model] = total
    ledger["total_per_gpu"] = ledger["actor"] + ledger["critic"] + ledger["reward"] + ledger["reference"]
    return ledger


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
