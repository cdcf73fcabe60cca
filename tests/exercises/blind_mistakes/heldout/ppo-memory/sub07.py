"""Exercise ppo-memory: how many bytes each GPU holds for the four models of PPO."""

import math
from fractions import Fraction


def _validate(name, n):
    if isinstance(n, bool):
        raise ValueError(f"{name} cannot be a bool")
    if not isinstance(n, (int, float)):
        raise ValueError(f"{name} must be a number")
    if isinstance(n, float) and not math.isfinite(n):
        raise ValueError(f"{name}={n!r} is not finite")
    q = Fraction(n)  # exact for floats too
    if q.denominator != 1:
        raise ValueError(f"{name}={n!r} must be a whole number")
    if q < 0:
        raise ValueError(f"{name}={n!r} must be non-negative")
    return q.numerator


def estimate_ppo_memory(actor_params, critic_params, reward_params, reference_params, weight_bytes=2, grad_bytes=2,
                        optimizer_bytes=12, num_gpus=1, zero_stage=0):
    a = _validate("actor_params", actor_params)
    c = _validate("critic_params", critic_params)
    r = _validate("reward_params", reward_params)
    ref = _validate("reference_params", reference_params)
    if not num_gpus >= 1:
        raise ValueError("num_gpus must be >= 1")
    if zero_stage not in range(4):
        raise ValueError("zero_stage must be in 0..3")

    def share(nbytes, sharded):
        return math.ceil(nbytes / num_gpus) if sharded else nbytes

    def trained(n):
        return (share(n * weight_bytes, zero_stage >= 3)
                + share(n * grad_bytes, zero_stage >= 2)
                + share(n * optimizer_bytes, zero_stage >= 1))

    out = {"actor": trained(a), "critic": trained(c), "reward": r * weight_bytes, "reference": ref * weight_bytes}
    out["total_per_gpu"] = out["actor"] + out["critic"] + out["reward"] + out["reference"]
    return {k: int(v) for k, v in out.items()}


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
