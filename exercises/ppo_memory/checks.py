"""Cases and weighted checks for `ppo-memory`.

No tensors here: the function returns a dict of Python ints, so the dtype, device, gradient
and memory checks of the tensor exercises do not apply. Each ledger is compared key by key
with the reference's, and every hand-worked case below was also worked out by hand (the
expected bytes are in its ``about`` text and in the comments).
"""

from __future__ import annotations

from typing import Any

import torch

from exercises.common import expect_value_error
from exercises.compare import require_no_error, where
from exercises.framework import Case, CaseGen, CheckContext, CheckFailed, check

KEYS = ("actor", "critic", "reward", "reference", "total_per_gpu")
B = 10**9
CHAPTER = (7 * B, 7 * B, 3 * B, 7 * B)  # actor, critic, reward, reference: the chapter's 7B setup
SMALL = (B, 6 * B // 10, 3 * B // 10, B)


def _case(gen: CaseGen, counts: tuple[Any, ...], tags: tuple[str, ...], about: str, **kwargs: Any) -> Case:
    return gen.case(*counts, kwargs=kwargs, tags=tags, about=about)


def cases(gen: CaseGen) -> list[Case]:
    """Every input the checks read, built from the run's seed."""
    out: list[Case] = []
    c = lambda *a, **k: out.append(_case(gen, *a, **k))  # noqa: E731
    # The chapter's example: 112e9 + 112e9 + 6e9 + 14e9 = 244e9 on one GPU.
    c(CHAPTER, ("chapter",), "the chapter's 7B/7B/3B/7B models on one GPU (expected total 244e9)")
    c((7e9, 7e9, 3e9, 7e9), ("chapter",), "the same counts written as floats 7e9/7e9/3e9/7e9 (expected total 244e9)")
    # 7e9 * (2 + 2 + 12) / 8 = 14e9 per trainable model; frozen models unchanged: total 48e9.
    c(
        CHAPTER,
        ("chapter-zero3",),
        "the chapter's models on 8 GPUs, ZeRO-3 (expected total 48e9)",
        num_gpus=8,
        zero_stage=3,
    )
    # ZeRO-1: actor 2e9 + 2e9 + 12e9/4 = 7e9, critic 4.2e9, reward 0.6e9, reference 2e9: 13.8e9.
    c(SMALL, ("stage1",), "1B/0.6B/0.3B/1B models on 4 GPUs, ZeRO-1 (expected total 13.8e9)", num_gpus=4, zero_stage=1)
    # ZeRO-1, chapter: actor 14e9 + 14e9 + 84e9/8 = 38.5e9, twice, + 6e9 + 14e9 = 97e9.
    c(CHAPTER, ("stage1",), "the chapter's models on 8 GPUs, ZeRO-1 (expected total 97e9)", num_gpus=8, zero_stage=1)
    # ZeRO-2: actor 2e9 + 2e9/4 + 12e9/4 = 5.5e9, critic 3.3e9, reward 0.6e9, reference 2e9: 11.4e9.
    c(SMALL, ("stage2",), "1B/0.6B/0.3B/1B models on 4 GPUs, ZeRO-2 (expected total 11.4e9)", num_gpus=4, zero_stage=2)
    # ZeRO-2, chapter: actor 14e9 + 1.75e9 + 10.5e9 = 26.25e9, twice, + 6e9 + 14e9 = 72.5e9.
    c(CHAPTER, ("stage2",), "the chapter's models on 8 GPUs, ZeRO-2 (expected total 72.5e9)", num_gpus=8, zero_stage=2)
    # Rounding up. ZeRO-3 on 8 GPUs: actor ceil(2_000_000_002/8) * 2 + ceil(12_000_000_012/8)
    # = 250_000_001 * 2 + 1_500_000_002 = 2_000_000_004; critic 250_000_000 * 2 + 1_499_999_999
    # = 1_999_999_999; reward 14; reference 10; total 4_000_000_027.
    c(
        (1_000_000_001, 999_999_999, 7, 5),
        ("rounding",),
        "counts not divisible by 8, ZeRO-3 (expected total 4000000027)",
        num_gpus=8,
        zero_stage=3,
    )
    # ZeRO-2 on 3 GPUs: actor 26 + ceil(26/3) + ceil(156/3) = 26 + 9 + 52 = 87; critic 14 + 5 + 28
    # = 47; reward 10; reference 22; total 166.
    c(
        (13, 7, 5, 11),
        ("rounding",),
        "13/7/5/11 parameters on 3 GPUs, ZeRO-2 (expected total 166)",
        num_gpus=3,
        zero_stage=2,
    )
    # ZeRO-1 on 5 GPUs: actor 2_000_006 * 2 + ceil(12_000_036/5) = 4_000_012 + 2_400_008 = 6_400_020;
    # critic 8_000_004 + ceil(24_000_012/5) = 8_000_004 + 4_800_003 = 12_800_007; reward 0;
    # reference 2; total 19_200_029.
    c(
        (1_000_003, 2_000_001, 0, 1),
        ("rounding",),
        "counts not divisible by 5, ZeRO-1 (expected total 19200029)",
        num_gpus=5,
        zero_stage=1,
    )
    # Other byte sizes. fp32 weights and grads, Adam m and v only (8): actor 7e9 * 16 = 112e9,
    # critic 112e9, reward 12e9, reference 28e9: 264e9.
    c(
        CHAPTER,
        ("bytes",),
        "the chapter's models with 4-byte weights and grads, 8-byte optimizer state (expected total 264e9)",
        weight_bytes=4,
        grad_bytes=4,
        optimizer_bytes=8,
    )
    # fp32 grads, 16-byte optimizer state, ZeRO-2 on 4 GPUs: actor 2e9 + 4e9/4 + 16e9/4 = 7e9,
    # critic 7e9, reward 1e9, reference 2e9: 17e9.
    c(
        (B, B, B // 2, B),
        ("bytes",),
        "1B/1B/0.5B/1B models, 2/4/16 bytes, ZeRO-2 on 4 GPUs (expected total 17e9)",
        weight_bytes=2,
        grad_bytes=4,
        optimizer_bytes=16,
        num_gpus=4,
        zero_stage=2,
    )
    # 1-byte weights, ZeRO-3 on 2 GPUs: actor 1.5e9 + 3e9 + 18e9 = 22.5e9, critic 7.5e9,
    # reward 1e9, reference 3e9: 34e9.
    c(
        (3 * B, B, B, 3 * B),
        ("bytes",),
        "3B/1B/1B/3B models, 1/2/12 bytes, ZeRO-3 on 2 GPUs (expected total 34e9)",
        weight_bytes=1,
        grad_bytes=2,
        optimizer_bytes=12,
        num_gpus=2,
        zero_stage=3,
    )
    # Random ledgers, compared with the reference.
    gpus = (2, 3, 4, 5, 6, 8, 16)
    for i in range(4):
        counts = tuple(gen.randint(1, 2 * 10**10) for _ in range(4))
        kwargs: dict[str, Any] = {"num_gpus": gpus[gen.randint(0, len(gpus))], "zero_stage": gen.randint(0, 4)}
        if i >= 2:
            kwargs.update(
                weight_bytes=gen.randint(1, 5), grad_bytes=gen.randint(1, 5), optimizer_bytes=gen.randint(4, 17)
            )
        c(counts, ("random",), f"random ledger {i + 1}", **kwargs)
    # Invalid parameter counts.
    for bad, about in (
        ((-1, 7 * B, 3 * B, 7 * B), "actor_params=-1"),
        ((7 * B, 7 * B, 7.5, 7 * B), "reward_params=7.5"),
        ((7 * B, -7 * B, 3 * B, 7 * B), "critic_params=-7000000000"),
        ((7 * B, 7 * B, 3 * B, B + 0.5), "reference_params=1000000000.5"),
    ):
        c(bad, ("invalid",), about)
    c(CHAPTER, ("invalid",), "num_gpus=0", num_gpus=0)
    c(CHAPTER, ("invalid",), "zero_stage=4", num_gpus=2, zero_stage=4)
    # Built last, so the cases before them keep their ids. Past 2**53 bytes a float no longer
    # holds every integer: ZeRO-3 on 3 GPUs, actor ceil(20_000_000_000_000_002 / 3) * 2
    # + 120_000_000_000_000_012 / 3 = 13_333_333_333_333_336 + 40_000_000_000_000_004
    # = 53_333_333_333_333_340 (math.ceil of the float quotient gives 53_333_333_333_333_342,
    # int(a / b) + (a % b > 0) gives ..._336 on the optimizer state); critic
    # 53_333_333_333_333_350; reward 14; reference 10; total 106_666_666_666_666_714.
    c(
        (10**16 + 1, 10**16 + 3, 7, 5),
        ("rounding",),
        "10**16 + 1 and 10**16 + 3 parameters on 3 GPUs, ZeRO-3: bytes past 2**53 (expected total 106666666666666714)",
        num_gpus=3,
        zero_stage=3,
    )
    c((7 * B, 7 * B, 3 * B, -7e9), ("invalid",), "reference_params=-7e9 (a negative integral float)")
    # A bool is an int in Python (True == 1), yet not a count (docs/contract.md §11). Built last (issue 37).
    c((7 * B, 7 * B, True, 7 * B), ("invalid",), "reward_params=True (a bool, not a count)")
    return out


def _kind(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a torch.Tensor ({value.dtype}, shape {list(value.shape)})"
    if isinstance(value, (int, float)):
        return f"{type(value).__name__} {value!r}"
    text = repr(value)
    return f"{type(value).__name__} {text[:80]}{'...' if len(text) > 80 else ''}"


def _gb(value: float) -> str:
    return f"{value / 1e9:.6g} GB"


def _ledger(ctx: CheckContext, case: Case) -> dict[str, Any]:
    """The learner's dict, or a failure saying what came back instead."""
    got = ctx.got(case)
    require_no_error(got, case)
    out = got.output
    if not isinstance(out, dict):
        raise CheckFailed(f"Expected a dict with keys {list(KEYS)}, got {_kind(out)} {where(case)}.")
    missing = [k for k in KEYS if k not in out]
    if missing:
        raise CheckFailed(
            f"The returned dict lacks the key(s) {missing} {where(case)}; expected the keys {list(KEYS)}, "
            f"got {sorted(map(str, out))}."
        )
    return out


def expect_ledger(ctx: CheckContext, cases: list[Case]) -> None:
    """Every key of every case equals the reference's number of bytes (ints and whole floats compare equal)."""
    for case in cases:
        out = _ledger(ctx, case)
        want = ctx.want(case).output
        wrong = []
        for key in KEYS:
            value = out[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise CheckFailed(
                    f"Expected {key!r} to be a number of bytes (a Python int), got {_kind(value)} {where(case)}."
                )
            if value != want[key]:
                wrong.append(
                    f"{key!r}: expected {want[key]} bytes ({_gb(want[key])}), got {value!r} "
                    f"({value - want[key]:+g} bytes)"
                )
        if wrong:
            raise CheckFailed(f"Wrong ledger {where(case)}: {'; '.join(wrong)}.")


@check("the chapter's example: 7B actor/critic/reference, 3B reward model, one GPU", 14, core=True)
def chapter(ctx: CheckContext) -> None:
    expect_ledger(ctx, ctx.cases("chapter"))


@check("the chapter's example on 8 GPUs with ZeRO stage 3", 12)
def chapter_zero3(ctx: CheckContext) -> None:
    expect_ledger(ctx, ctx.cases("chapter-zero3"))


@check("ZeRO stage 1 shards the optimizer state of the trainable models", 12)
def stage1(ctx: CheckContext) -> None:
    expect_ledger(ctx, ctx.cases("stage1"))


@check("ZeRO stage 2 shards optimizer state and grads, not weights", 12)
def stage2(ctx: CheckContext) -> None:
    expect_ledger(ctx, ctx.cases("stage2"))


@check(
    "sharded bytes rounded up when not divisible by num_gpus",
    12,
    announce=(
        "sharded bytes rounded up when not divisible by num_gpus",
        "exact past 2**53 bytes (10**16 parameters on 3 GPUs): integer arithmetic, no float division",
    ),
)
def rounding(ctx: CheckContext) -> None:
    expect_ledger(ctx, ctx.cases("rounding"))


@check("non-default weight_bytes, grad_bytes and optimizer_bytes", 10)
def byte_sizes(ctx: CheckContext) -> None:
    expect_ledger(ctx, ctx.cases("bytes"))


@check("random ledgers (counts, num_gpus, zero_stage, byte sizes)", 10)
def random_ledgers(ctx: CheckContext) -> None:
    expect_ledger(ctx, ctx.cases("random"))


@check(
    "ValueError on negative or fractional parameter counts, num_gpus < 1, or zero_stage outside 0-3",
    10,
    gated=True,
    announce=(
        "ValueError on negative or fractional parameter counts, num_gpus < 1, or zero_stage outside 0-3",
        "a negative integral float such as -7e9 included",
        "and a bool count such as True",
    ),
)
def invalid_counts(ctx: CheckContext) -> None:
    expect_value_error(
        ctx,
        ctx.cases("invalid"),
        describe=_kind,
        returned=(
            "Expected ValueError for {about} (counts must be non-negative integers, num_gpus at least 1, "
            "zero_stage 0-3), but the call returned {value} {where}."
        ),
        raised="Expected ValueError for {about}, got {error} {where}.",
    )


@check("every entry is a Python int (whole bytes, not floats)", 8, gated=True, reads=("types",))
def ints(ctx: CheckContext) -> None:
    for tag in ("chapter", "chapter-zero3", "stage1", "stage2", "rounding", "bytes", "random"):
        for case in ctx.cases(tag):
            out = _ledger(ctx, case)
            for key in KEYS:
                if type(out[key]) is not int:
                    raise CheckFailed(
                        f"Expected {key!r} to be a Python int (a whole number of bytes), got {_kind(out[key])} "
                        f"{where(case)}; round sharded bytes up with integer arithmetic (-(-x // n)) rather than "
                        "true division."
                    )
