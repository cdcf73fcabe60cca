"""What the learner is asked for (docs/contract.md §11, verbatim in meaning)."""

from exercises.framework import ExerciseSpec

SPEC = ExerciseSpec(
    slug="ppo-memory",
    title="PPO memory ledger (four models, ZeRO stages)",
    function_name="estimate_ppo_memory",
    summary="Bytes per GPU for the Actor, Critic, Reward Model and Reference, with ZeRO sharding.",
    order=11,
    description="""\
`estimate_ppo_memory(actor_params, critic_params, reward_params, reference_params, weight_bytes=2, grad_bytes=2, optimizer_bytes=12, num_gpus=1, zero_stage=0) -> dict`

The four-model memory ledger of PPO, in bytes, after the course chapter's table (Actor and
Critic train; Reference and Reward Model are frozen). Trainable models hold
weights + grads + optimizer state (`optimizer_bytes` per parameter: fp32 master copy, Adam m
and v); frozen models hold weights only. ZeRO stage 1 shards optimizer state, stage 2 also
grads, stage 3 also weights of the trainable models across `num_gpus` (a sharded quantity,
in bytes, is divided by `num_gpus`, rounded up). Frozen models are never sharded.

Returns `{"actor": ..., "critic": ..., "reward": ..., "reference": ..., "total_per_gpu": ...}`,
Python `int`s, bytes per GPU. Parameter counts are integers or integral floats (`7e9` for
"7B" is accepted); negative counts (`-7e9` too), fractional counts (`7.5`), bools, `num_gpus < 1`,
and a `zero_stage` outside 0-3 raise `ValueError`. Rounding is per quantity per model: `ceil(bytes / num_gpus)`
for each sharded quantity, in exact integer arithmetic.

Worked example (the chapter's case: a 7B Actor, 7B Reference, 7B Critic, 3B Reward Model,
bf16 weights). The chapter tallies weights as 14 + 14 + 14 + 6 = 48 GB and estimates the
whole run at about 96 GB with a rough allowance for optimizer state and activations. This
exercise counts the full mixed-precision Adam ledger instead, with the defaults
(2 + 2 + 12 bytes per trainable parameter, 2 per frozen one) and no activations:
actor 112e9, critic 112e9, reward 6e9, reference 14e9, total_per_gpu 244e9 bytes on one GPU.
With `num_gpus=8, zero_stage=3`: actor and critic 14e9 each, reward 6e9, reference 14e9,
total_per_gpu 48e9.
""",
)
