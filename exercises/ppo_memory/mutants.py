"""Known-wrong solutions of `ppo-memory`, each embodying one misconception.

Each function is self-contained (torch, F and math only) so it can be submitted as a file.
"""

import math  # noqa: F401  (available to submitted mutants)

import torch  # noqa: F401
import torch.nn.functional as F  # noqa: F401

from exercises.framework import mutant


@mutant("sharding the frozen models: ZeRO partitions only the trainable models' states; the Reward Model and Reference keep full weights on every GPU")
def shard_frozen(actor_params, critic_params, reward_params, reference_params, weight_bytes=2, grad_bytes=2,
                 optimizer_bytes=12, num_gpus=1, zero_stage=0):
    for p in (actor_params, critic_params, reward_params, reference_params):
        if p < 0 or p != int(p):
            raise ValueError("parameter counts must be non-negative integers")

    def trainable(p):
        w = p * weight_bytes
        g = p * grad_bytes
        o = p * optimizer_bytes
        if zero_stage >= 3:
            w = -(-w // num_gpus)
        if zero_stage >= 2:
            g = -(-g // num_gpus)
        if zero_stage >= 1:
            o = -(-o // num_gpus)
        return w + g + o

    def frozen(p):
        w = p * weight_bytes
        return -(-w // num_gpus) if zero_stage >= 3 else w
    ledger = {"actor": trainable(int(actor_params)), "critic": trainable(int(critic_params)),
              "reward": frozen(int(reward_params)), "reference": frozen(int(reference_params))}
    ledger["total_per_gpu"] = sum(ledger.values())
    return ledger


@mutant("sharding weights at ZeRO stage 2: stage 2 shards optimizer state and grads; only stage 3 also shards the weights")
def weights_sharded_at_stage2(actor_params, critic_params, reward_params, reference_params, weight_bytes=2, grad_bytes=2,
                              optimizer_bytes=12, num_gpus=1, zero_stage=0):
    for p in (actor_params, critic_params, reward_params, reference_params):
        if p < 0 or p != int(p):
            raise ValueError("parameter counts must be non-negative integers")

    def trainable(p):
        w = p * weight_bytes
        g = p * grad_bytes
        o = p * optimizer_bytes
        if zero_stage >= 2:
            w = -(-w // num_gpus)
        if zero_stage >= 2:
            g = -(-g // num_gpus)
        if zero_stage >= 1:
            o = -(-o // num_gpus)
        return w + g + o
    ledger = {"actor": trainable(int(actor_params)), "critic": trainable(int(critic_params)),
              "reward": int(reward_params) * weight_bytes, "reference": int(reference_params) * weight_bytes}
    ledger["total_per_gpu"] = sum(ledger.values())
    return ledger


@mutant("rounding sharded bytes down (floor division): a GPU must hold the largest shard, so divide and round up")
def round_down(actor_params, critic_params, reward_params, reference_params, weight_bytes=2, grad_bytes=2,
               optimizer_bytes=12, num_gpus=1, zero_stage=0):
    for p in (actor_params, critic_params, reward_params, reference_params):
        if p < 0 or p != int(p):
            raise ValueError("parameter counts must be non-negative integers")

    def trainable(p):
        w = p * weight_bytes
        g = p * grad_bytes
        o = p * optimizer_bytes
        if zero_stage >= 3:
            w = w // num_gpus
        if zero_stage >= 2:
            g = g // num_gpus
        if zero_stage >= 1:
            o = o // num_gpus
        return w + g + o
    ledger = {"actor": trainable(int(actor_params)), "critic": trainable(int(critic_params)),
              "reward": int(reward_params) * weight_bytes, "reference": int(reference_params) * weight_bytes}
    ledger["total_per_gpu"] = sum(ledger.values())
    return ledger


@mutant("forgetting the gradients: a trainable model holds weights, grads and optimizer state")
def forget_grads(actor_params, critic_params, reward_params, reference_params, weight_bytes=2, grad_bytes=2,
                 optimizer_bytes=12, num_gpus=1, zero_stage=0):
    for p in (actor_params, critic_params, reward_params, reference_params):
        if p < 0 or p != int(p):
            raise ValueError("parameter counts must be non-negative integers")

    def trainable(p):
        w = p * weight_bytes
        g = p * grad_bytes
        o = p * optimizer_bytes
        if zero_stage >= 3:
            w = -(-w // num_gpus)
        if zero_stage >= 2:
            g = -(-g // num_gpus)
        if zero_stage >= 1:
            o = -(-o // num_gpus)
        return w + o
    ledger = {"actor": trainable(int(actor_params)), "critic": trainable(int(critic_params)),
              "reward": int(reward_params) * weight_bytes, "reference": int(reference_params) * weight_bytes}
    ledger["total_per_gpu"] = sum(ledger.values())
    return ledger


@mutant("giving the frozen Reward Model and Reference grads and optimizer state: they only run forward passes and hold weights only")
def frozen_as_trainable(actor_params, critic_params, reward_params, reference_params, weight_bytes=2, grad_bytes=2,
                        optimizer_bytes=12, num_gpus=1, zero_stage=0):
    for p in (actor_params, critic_params, reward_params, reference_params):
        if p < 0 or p != int(p):
            raise ValueError("parameter counts must be non-negative integers")

    def trainable(p):
        w = p * weight_bytes
        g = p * grad_bytes
        o = p * optimizer_bytes
        if zero_stage >= 3:
            w = -(-w // num_gpus)
        if zero_stage >= 2:
            g = -(-g // num_gpus)
        if zero_stage >= 1:
            o = -(-o // num_gpus)
        return w + g + o
    ledger = {"actor": trainable(int(actor_params)), "critic": trainable(int(critic_params)),
              "reward": trainable(int(reward_params)), "reference": trainable(int(reference_params))}
    ledger["total_per_gpu"] = sum(ledger.values())
    return ledger


@mutant("total over all GPUs instead of per GPU: total_per_gpu is what one GPU holds, not that times num_gpus")
def total_not_per_gpu(actor_params, critic_params, reward_params, reference_params, weight_bytes=2, grad_bytes=2,
                      optimizer_bytes=12, num_gpus=1, zero_stage=0):
    for p in (actor_params, critic_params, reward_params, reference_params):
        if p < 0 or p != int(p):
            raise ValueError("parameter counts must be non-negative integers")

    def trainable(p):
        w = p * weight_bytes
        g = p * grad_bytes
        o = p * optimizer_bytes
        if zero_stage >= 3:
            w = -(-w // num_gpus)
        if zero_stage >= 2:
            g = -(-g // num_gpus)
        if zero_stage >= 1:
            o = -(-o // num_gpus)
        return w + g + o
    ledger = {"actor": trainable(int(actor_params)), "critic": trainable(int(critic_params)),
              "reward": int(reward_params) * weight_bytes, "reference": int(reference_params) * weight_bytes}
    ledger["total_per_gpu"] = sum(ledger.values()) * num_gpus
    return ledger


@mutant("ZeRO stages taken one at a time: each stage adds to the previous one (stage 2 shards optimizer state and grads, stage 3 all three)")
def non_cumulative_stages(actor_params, critic_params, reward_params, reference_params, weight_bytes=2, grad_bytes=2,
                          optimizer_bytes=12, num_gpus=1, zero_stage=0):
    for p in (actor_params, critic_params, reward_params, reference_params):
        if p < 0 or p != int(p):
            raise ValueError("parameter counts must be non-negative integers")

    def trainable(p):
        w = p * weight_bytes
        g = p * grad_bytes
        o = p * optimizer_bytes
        if zero_stage == 3:
            w = -(-w // num_gpus)
        if zero_stage == 2:
            g = -(-g // num_gpus)
        if zero_stage == 1:
            o = -(-o // num_gpus)
        return w + g + o
    ledger = {"actor": trainable(int(actor_params)), "critic": trainable(int(critic_params)),
              "reward": int(reward_params) * weight_bytes, "reference": int(reference_params) * weight_bytes}
    ledger["total_per_gpu"] = sum(ledger.values())
    return ledger


@mutant("byte sizes hard-coded to 2/2/12 instead of using weight_bytes, grad_bytes and optimizer_bytes")
def fixed_bytes(actor_params, critic_params, reward_params, reference_params, weight_bytes=2, grad_bytes=2,
                optimizer_bytes=12, num_gpus=1, zero_stage=0):
    for p in (actor_params, critic_params, reward_params, reference_params):
        if p < 0 or p != int(p):
            raise ValueError("parameter counts must be non-negative integers")
    weight_bytes, grad_bytes, optimizer_bytes = 2, 2, 12

    def trainable(p):
        w = p * weight_bytes
        g = p * grad_bytes
        o = p * optimizer_bytes
        if zero_stage >= 3:
            w = -(-w // num_gpus)
        if zero_stage >= 2:
            g = -(-g // num_gpus)
        if zero_stage >= 1:
            o = -(-o // num_gpus)
        return w + g + o
    ledger = {"actor": trainable(int(actor_params)), "critic": trainable(int(critic_params)),
              "reward": int(reward_params) * weight_bytes, "reference": int(reference_params) * weight_bytes}
    ledger["total_per_gpu"] = sum(ledger.values())
    return ledger


@mutant("true division without rounding up: sharded bytes come out as fractional floats instead of whole bytes")
def true_division(actor_params, critic_params, reward_params, reference_params, weight_bytes=2, grad_bytes=2,
                  optimizer_bytes=12, num_gpus=1, zero_stage=0):
    for p in (actor_params, critic_params, reward_params, reference_params):
        if p < 0 or p != int(p):
            raise ValueError("parameter counts must be non-negative integers")

    def trainable(p):
        w = p * weight_bytes
        g = p * grad_bytes
        o = p * optimizer_bytes
        if zero_stage >= 3:
            w = w / num_gpus
        if zero_stage >= 2:
            g = g / num_gpus
        if zero_stage >= 1:
            o = o / num_gpus
        return w + g + o
    ledger = {"actor": trainable(int(actor_params)), "critic": trainable(int(critic_params)),
              "reward": int(reward_params) * weight_bytes, "reference": int(reference_params) * weight_bytes}
    ledger["total_per_gpu"] = sum(ledger.values())
    return ledger


@mutant("no validation of the parameter counts: a negative or fractional count must raise ValueError, not produce a ledger")
def no_validation(actor_params, critic_params, reward_params, reference_params, weight_bytes=2, grad_bytes=2,
                  optimizer_bytes=12, num_gpus=1, zero_stage=0):

    def trainable(p):
        w = p * weight_bytes
        g = p * grad_bytes
        o = p * optimizer_bytes
        if zero_stage >= 3:
            w = -(-w // num_gpus)
        if zero_stage >= 2:
            g = -(-g // num_gpus)
        if zero_stage >= 1:
            o = -(-o // num_gpus)
        return w + g + o
    ledger = {"actor": trainable(actor_params), "critic": trainable(critic_params),
              "reward": reward_params * weight_bytes, "reference": reference_params * weight_bytes}
    ledger["total_per_gpu"] = sum(ledger.values())
    return ledger
