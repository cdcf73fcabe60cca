"""PPO memory ledger: bytes per GPU of the actor, critic, reward model and reference."""

import math


def _whole(name, x):
    if type(x) is bool or not isinstance(x, (int, float)):
        raise ValueError(f"{name}: expected a whole number, got {x!r}")
    if isinstance(x, float) and not (math.isfinite(x) and x == int(x)):
        raise ValueError(f"{name}: expected a whole number, got {x!r}")
    if isinstance(x, int) and x < 0:
        raise ValueError(f"{name}: must be >= 0, got {x!r}")
    return int(x)


def _ceil_div(a, b):
    q, r = divmod(a, b)
    return q + (1 if r else 0)


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
    """Weights + grads + optimizer state for the trained models, weights only for the frozen ones."""
    counts = {
        "actor": _whole("actor_params", actor_params),
        "critic": _whole("critic_params", critic_params),
        "reward": _whole("reward_params", reward_params),
        "reference": _whole("reference_params", reference_params),
    }
    w = _whole("weight_bytes", weight_bytes)
    g = _whole("grad_bytes", grad_bytes)
    o = _whole("optimizer_bytes", optimizer_bytes)
    if type(num_gpus) is bool or not isinstance(num_gpus, int) or num_gpus < 1:
        raise ValueError(f"num_gpus must be an integer >= 1, got {num_gpus!r}")
    if zero_stage not in (0, 1, 2, 3):
        raise ValueError(f"zero_stage must be between 0 and 3, got {zero_stage!r}")

    out = {}
    for name in ("actor", "critic"):
        p = counts[name]
        weights = _ceil_div(p * w, num_gpus) if zero_stage >= 3 else p * w
        grads = _ceil_div(p * g, num_gpus) if zero_stage >= 2 else p * g
        optimizer = _ceil_div(p * o, num_gpus) if zero_stage >= 1 else p * o
        out[name] = weights + grads + optimizer
    for name in ("reward", "reference"):
        out[name] = counts[name] * w
    out["total_per_gpu"] = out["actor"] + out["critic"] + out["reward"] + out["reference"]
    return out


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
