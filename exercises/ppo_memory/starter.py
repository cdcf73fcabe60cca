"""Exercise ppo-memory: how many bytes each GPU holds for the four models of PPO.

Fill in the `# YOUR CODE` blocks, run `python this_file.py` for the self-tests, then submit
with `ppo-submit this_file.py`.
"""


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
    """The PPO memory ledger in bytes per GPU (weights, grads and optimizer state; no activations).

    Args:
        actor_params, critic_params: parameter counts of the two models that TRAIN. Each holds
            weights (weight_bytes per parameter), grads (grad_bytes) and optimizer state
            (optimizer_bytes: fp32 master copy 4 + Adam m 4 + Adam v 4 = 12 by default).
        reward_params, reference_params: parameter counts of the two FROZEN models: weights
            only (weight_bytes per parameter), never sharded.
        weight_bytes, grad_bytes, optimizer_bytes: bytes per parameter of each quantity.
        num_gpus: GPUs that ZeRO shards across.
        zero_stage: 0 (no sharding), 1 (optimizer state sharded), 2 (optimizer state and
            grads sharded), 3 (optimizer state, grads and weights sharded), for the
            trainable models only. A sharded quantity (in bytes) is divided by num_gpus and
            rounded UP: ceil(bytes / num_gpus), in exact integer arithmetic (-(-bytes // num_gpus)):
            past 2**53 bytes a float division is off.

    Returns:
        {"actor": ..., "critic": ..., "reward": ..., "reference": ..., "total_per_gpu": ...}:
        Python ints, bytes held by one GPU; total_per_gpu is the sum of the four.

    Raises:
        ValueError when a parameter count is negative, fractional or a bool (7.5, -1, -7e9, True;
        an integral float such as 7e9 is accepted), when num_gpus < 1, or when zero_stage is not 0-3.

    Graded (points in brackets; * counts only once the values on ordinary inputs are right):
        - the chapter's example: 7B actor/critic/reference, 3B reward model, one GPU [14]
        - the chapter's example on 8 GPUs with ZeRO stage 3 [12]
        - ZeRO stage 1 shards the optimizer state of the trainable models [12]
        - ZeRO stage 2 shards optimizer state and grads, not weights [12]
        - sharded bytes rounded up when not divisible by num_gpus; exact past 2**53 bytes (10**16
          parameters on 3 GPUs): integer arithmetic, no float division [12]
        - non-default weight_bytes, grad_bytes and optimizer_bytes [10]
        - random ledgers (counts, num_gpus, zero_stage, byte sizes) [10]
        - ValueError on negative or fractional parameter counts, num_gpus < 1, or zero_stage outside 0-3,
          a negative integral float such as -7e9 included, and a bool count such as True [10*]
        - every entry is a Python int (whole bytes, not floats) [8*]
    """
    # YOUR CODE: validate the four parameter counts

    # YOUR CODE: bytes of a trainable model: weights + grads + optimizer state, each sharded
    # (divided by num_gpus, rounded up) when zero_stage says so

    # YOUR CODE: bytes of a frozen model: weights only

    # YOUR CODE: the dict of the four models and their per-GPU total
    raise NotImplementedError("estimate_ppo_memory is not written yet")


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
    for bad in (-1, 7.5, True):
        try:
            estimate_ppo_memory(bad, 1, 1, 1)
        except ValueError:
            pass
        else:
            raise AssertionError(f"actor_params={bad!r} must raise ValueError")
    print("self-tests passed")
