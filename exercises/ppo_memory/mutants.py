"""Known mistakes of `ppo-memory`: switches of the faulty reference (faulty.py).

``explains`` lists the checks each mistake can make fail; tests hold every single-fault mutant
to it over many seeds.
"""

from exercises.mistakes import fault, fault_mutants
from exercises.ppo_memory.faulty import faulty_ppo_memory

LEDGERS = ("chapter", "chapter_zero3", "stage1", "stage2", "rounding", "byte_sizes", "random_ledgers", "ints")

FAULTS = [
    fault(
        "shard-frozen",
        "sharding the frozen models: ZeRO partitions only the trainable models' states; the Reward Model and Reference keep full weights on every GPU",
        fix="Keep the full weights of the Reward Model and the Reference on every GPU: ZeRO shards only trainable models.",
        explains=LEDGERS,
    ),
    fault(
        "weights-sharded-at-stage2",
        "sharding weights at ZeRO stage 2: stage 2 shards optimizer state and grads; only stage 3 also shards the weights",
        fix="Shard the weights only at ZeRO stage 3; stage 2 shards grads and optimizer state.",
        explains=LEDGERS,
    ),
    fault(
        "round-down",
        "rounding sharded bytes down (floor division): a GPU must hold the largest shard, so divide and round up",
        fix="Round each sharded quantity up: -(-nbytes // num_gpus).",
        explains=LEDGERS,
    ),
    fault(
        "forget-grads",
        "forgetting the gradients: a trainable model holds weights, grads and optimizer state",
        fix="Count grads for the Actor and the Critic: params * grad_bytes (sharded from stage 2).",
        explains=LEDGERS,
    ),
    fault(
        "frozen-as-trainable",
        "giving the frozen Reward Model and Reference grads and optimizer state: they only run forward passes and hold weights only",
        fix="Frozen models (Reward Model, Reference) hold weights only: params * weight_bytes.",
        explains=LEDGERS,
    ),
    fault(
        "total-not-per-gpu",
        "total over all GPUs instead of per GPU: total_per_gpu is what one GPU holds, not that times num_gpus",
        fix="total_per_gpu is the sum of the four per-GPU entries, not multiplied by num_gpus.",
        explains=LEDGERS,
    ),
    fault(
        "non-cumulative-stages",
        "ZeRO stages taken one at a time: each stage adds to the previous one (stage 2 shards optimizer state and grads, stage 3 all three)",
        fix="Stages are cumulative: stage >= 1 shards optimizer state, >= 2 also grads, 3 also weights.",
        explains=LEDGERS,
    ),
    fault(
        "fixed-bytes",
        "byte sizes hard-coded to 2/2/12 instead of using weight_bytes, grad_bytes and optimizer_bytes",
        fix="Use the weight_bytes, grad_bytes and optimizer_bytes arguments.",
        explains=LEDGERS,
    ),
    fault(
        "true-division",
        "true division without rounding up: sharded bytes come out as fractional floats instead of whole bytes",
        fix="Use integer ceiling division -(-nbytes // num_gpus), not /.",
        explains=LEDGERS,
    ),
    fault(
        "no-validation",
        "no validation of the parameter counts: a negative or fractional count must raise ValueError, not produce a ledger",
        fix="Raise ValueError for negative or fractional counts; convert integral floats such as 7e9 to int.",
        explains=LEDGERS + ("invalid_counts",),
    ),
]

FAULTS += [
    fault(
        "float-ceil",
        "rounding up through float division: math.ceil(bytes / num_gpus) is off once the bytes pass "
        "2**53, where a float no longer holds every integer",
        fix="Round up in exact integer arithmetic: -(-nbytes // num_gpus).",
        explains=("rounding",),
    ),
    fault(
        "negative-float-accepted",
        "a negative integral float accepted as a count: -7e9 passes the integral test, "
        "and the sign is checked for ints only",
        fix="Check the sign after converting: a count, int or integral float, must not be negative.",
        explains=("invalid_counts",),
    ),
]

# Built last (issue 37), so the catalogue's earlier mistakes keep their order.
FAULTS += [
    fault(
        "bool-accepted",
        "a bool accepted as a parameter count: True is an int in Python (True == 1), so it passes the "
        "integer and sign tests and is counted as one parameter instead of raising ValueError",
        fix="Refuse bools before the integer test: isinstance(value, bool) raises ValueError.",
        explains=("invalid_counts",),
    ),
]

MUTANTS = fault_mutants(faulty_ppo_memory, FAULTS)
