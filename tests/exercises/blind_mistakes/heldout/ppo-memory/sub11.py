"""Exercise ppo-memory: how many bytes each GPU holds for the four models of PPO."""


def estimate_ppo_memory(actor_params, critic_params, reward_params, reference_params, weight_bytes=2, grad_bytes=2,
                        optimizer_bytes=12, num_gpus=1, zero_stage=0):
    raw = dict(actor=actor_params, critic=critic_params, reward=reward_params, reference=reference_params)
    n = {}
    for k, v in raw.items():
        if not isinstance(v, (int, float)) or (type(v) is float and not v.is_integer()) or v < 0:
            raise ValueError(f"{k}_params={v!r} is not a non-negative whole count")
        n[k] = int(v)
    if num_gpus < 1 or zero_stage not in (0, 1, 2, 3):
        raise ValueError(f"bad num_gpus={num_gpus!r} or zero_stage={zero_stage!r}")
    cd = lambda b, stage: -(-b // num_gpus) if zero_stage >= stage else b  # noqa: E731
    out = {k: cd(n[k] * weight_bytes, 3) + cd(n[k] * grad_bytes, 3) + cd(n[k] * optimizer_bytes, 3)
           for k in ("actor", "critic")}
    out.update({k: n[k] * weight_bytes for k in ("reward", "reference")})
    out["total_per_gpu"] = sum(out.values())
    return out


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
