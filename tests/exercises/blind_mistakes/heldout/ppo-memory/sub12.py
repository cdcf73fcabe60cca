"""Exercise ppo-memory: how many bytes each GPU holds for the four models of PPO."""

import numbers
import operator


def _count(name, value):
    if isinstance(value, bool):
        raise ValueError(f"{name}: a bool is not a parameter count")
    if isinstance(value, numbers.Integral):
        n = operator.index(value)
    elif isinstance(value, float):
        if value != value or abs(value) == float("inf") or value != int(value):
            raise ValueError(f"{name}: {value!r} is not a whole number")
        n = int(value)
    else:
        raise ValueError(f"{name}: expected an integer count, got {type(value).__name__}")
    if n < 0:
        raise ValueError(f"{name}: {value!r} is negative")
    return n


def estimate_ppo_memory(actor_params, critic_params, reward_params, reference_params, weight_bytes=2, grad_bytes=2,
                        optimizer_bytes=12, num_gpus=1, zero_stage=0):
    counts = [_count(n, v) for n, v in (("actor_params", actor_params), ("critic_params", critic_params),
                                          ("reward_params", reward_params), ("reference_params", reference_params))]
    g = int(num_gpus)

    def ceil_div(x):
        return (x + g - 1) // g

    def trained(n):
        w, gr, o = n * weight_bytes, n * grad_bytes, n * optimizer_bytes
        sharded = (w if zero_stage >= 3 else 0) + (gr if zero_stage >= 2 else 0) + (o if zero_stage >= 1 else 0)
        return (w + gr + o - sharded) + ceil_div(sharded)

    a, c, r, ref = counts
    out = {"actor": int(trained(a)), "critic": int(trained(c)), "reward": int(r * weight_bytes),
           "reference": int(ref * weight_bytes)}
    out["total_per_gpu"] = int(sum(out.values()))
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
