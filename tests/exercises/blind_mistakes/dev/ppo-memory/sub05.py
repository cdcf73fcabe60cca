"""Exercise ppo-memory: how many bytes each GPU holds for the four models of PPO."""

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelLedger:
    params: int
    trainable: bool

    def bytes_per_gpu(self, weight_bytes, grad_bytes, optimizer_bytes, num_gpus, zero_stage):
        def maybe_shard(total, stage_needed):
            if self.trainable and zero_stage >= stage_needed:
                return (total + num_gpus - 1) // num_gpus
            return total

        weights = maybe_shard(self.params * weight_bytes, 3)
        grads = maybe_shard(self.params * grad_bytes, 2)
        optimizer = maybe_shard(self.params * optimizer_bytes, 1)
        return weights + grads + optimizer


def _to_count(name, x):
    if isinstance(x, bool):
        raise ValueError(f"{name}: bool is not a count")
    if isinstance(x, float):
        if x != x or x in (float("inf"), float("-inf")) or not x.is_integer():
            raise ValueError(f"{name}: {x} is not integral")
        x = int(x)
    if not isinstance(x, int):
        raise ValueError(f"{name}: expected an int")
    if x < 0:
        raise ValueError(f"{name}: negative count {x}")
    return x


def estimate_ppo_memory(actor_params, critic_params, reward_params, reference_params, weight_bytes=2, grad_bytes=2,
                        optimizer_bytes=12, num_gpus=1, zero_stage=0):
    models = {
        "actor": ModelLedger(_to_count("actor_params", actor_params), True),
        "critic": ModelLedger(_to_count("critic_params", critic_params), True),
        "reward": ModelLedger(_to_count("reward_params", reward_params), False),
        "reference": ModelLedger(_to_count("reference_params", reference_params), False),
    }
    if num_gpus < 1:
        raise ValueError(f"num_gpus={num_gpus} must be >= 1")
    out = {name: m.bytes_per_gpu(weight_bytes, grad_bytes, optimizer_bytes, num_gpus, zero_stage)
           for name, m in models.items()}
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
