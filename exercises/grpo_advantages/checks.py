"""Cases and weighted checks for `grpo-advantages`."""

from __future__ import annotations

import torch

from exercises.common import expect_dtype_device, expect_inputs_unchanged, expect_value_error
from exercises.compare import assert_close, cancellation_atol, require_tensor, tolerance, where
from exercises.framework import Case, CaseGen, CheckContext, CheckFailed, check


def _slack(case: Case, want: torch.Tensor) -> torch.Tensor:
    """Each group's cancellation slack (:func:`~exercises.compare.cancellation_atol`): its float64
    mean against what its scores are divided by (``std + eps``; 1 without ``scale_by_std``)."""
    size = case.args[1]
    grouped = case.args[0].to(torch.float64).reshape(-1, size)
    mean = grouped.mean(dim=1, keepdim=True)
    std = grouped.std(dim=1, keepdim=True)
    spread = std + case.kwargs.get("eps", 1e-6) if case.kwargs.get("scale_by_std", True) else torch.ones_like(std)
    spread = torch.where(std > 0, spread, 0.0)  # a group of equal scores: exactly 0, no slack
    return cancellation_atol(mean, spread, size, want.to(torch.float64).reshape(-1, size), want.dtype).reshape(-1)


def expect_advantages(ctx: CheckContext, cases: list[Case]) -> None:
    """Every case's advantages match the reference's, within the dtype's tolerance grown by each
    group's cancellation factor (docs/contract.md, "Numbers")."""
    for case in cases:
        got = require_tensor(ctx.got(case), case, (), "advantages")
        want = ctx.want(case).output
        assert isinstance(want, torch.Tensor), f"reference returned no tensor for case {case.id}"
        assert_close(got, want, case, "advantages", atol=tolerance(want.dtype)[1] + _slack(case, want))


def _scores(gen: CaseGen, groups: int, group_size: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Continuous scores whose groups (prompts) differ in difficulty: own offset and spread."""
    offset = gen.randn(groups, 1, dtype=torch.float64, scale=3.0)
    spread = gen.uniform(groups, 1, low=0.3, high=2.5, dtype=torch.float64)
    return (offset + spread * gen.randn(groups, group_size, dtype=torch.float64)).reshape(-1).to(dtype)


def cases(gen: CaseGen) -> list[Case]:
    """Every input the checks read, built from the run's seed."""
    out: list[Case] = []
    for i, group_size in enumerate((4, 8, 3)):
        groups = gen.randint(3, 7)
        kwargs = {} if i == 0 else {"eps": 1e-6, "scale_by_std": True}
        out.append(
            gen.case(
                _scores(gen, groups, group_size),
                group_size,
                kwargs=kwargs,
                tags=("random",),
                about=f"{groups} groups of {group_size}",
            )
        )
    out.append(
        gen.case(
            torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0]),
            4,
            tags=("random",),
            about="0/1 rewards, 4 groups of 4, none all equal",
        )
    )
    for group_size in (4, 5):
        groups = gen.randint(3, 6)
        out.append(
            gen.case(
                _scores(gen, groups, group_size),
                group_size,
                kwargs={"scale_by_std": False},
                tags=("nostd",),
                about=f"{groups} groups of {group_size}, scale_by_std=False",
            )
        )
    # All-equal groups: all correct, all wrong, mixed; and a float group of equal scores.
    rows = [[1.0] * 4, [0.0, 1.0, 1.0, 0.0], [0.0] * 4, [1.0, 0.0, 0.0, 0.0]]
    perm = torch.randperm(4, generator=gen.generator).tolist()
    out.append(
        gen.case(
            torch.tensor([x for r in (rows[p] for p in perm) for x in r]),
            4,
            tags=("all-equal",),
            about="0/1 rewards, 4 groups of 4: all 1, all 0 and mixed",
        )
    )
    equal = _scores(gen, 3, 6)
    equal[6:12] = 2.5
    out.append(
        gen.case(
            equal, 6, kwargs={"eps": 1e-4}, tags=("all-equal",), about="3 groups of 6, the middle one all 2.5, eps=1e-4"
        )
    )
    # A float32 group of seven 0.7s: its float mean is a rounding step off 0.7, and that step
    # divided by eps is garbage unless the zero spread is detected.
    rounded = _scores(gen, 3, 7)
    rounded[7:14] = 0.7
    out.append(gen.case(rounded, 7, tags=("all-equal",), about="3 groups of 7, the middle one all 0.7 (float32)"))
    # eps: a non-default one, and groups whose spread (1e-4) is close to eps (1e-6 is outside the sqrt).
    out.append(gen.case(_scores(gen, 4, 4), 4, kwargs={"eps": 0.5}, tags=("eps",), about="4 groups of 4, eps=0.5"))
    tied = 1.0 + 1e-4 * gen.randn(3, 4, dtype=torch.float64) + torch.arange(3, dtype=torch.float64).unsqueeze(1)
    out.append(gen.case(tied.reshape(-1), 4, tags=("eps",), about="3 groups of 4 within 1e-4 of each other (float64)"))
    # Small groups, where Bessel's correction is large.
    for group_size in (2, 3):
        out.append(
            gen.case(
                _scores(gen, 4, group_size, dtype=torch.float64),
                group_size,
                tags=("unbiased",),
                about=f"4 groups of {group_size} (float64)",
            )
        )
    # Consecutive groups: prompts with very different offsets, laid out prompt by prompt.
    offsets = torch.tensor([0.0, 10.0, -10.0, 20.0]).repeat_interleave(3)
    out.append(
        gen.case(offsets + gen.randn(12), 3, tags=("consecutive",), about="4 groups of 3 with offsets 0, 10, -10, 20")
    )
    out.append(gen.case(_scores(gen, 2, 5), 5, tags=("consecutive",), about="2 groups of 5"))
    # Flat result.
    for groups, group_size in ((4, 4), (3, 6)):
        out.append(
            gen.case(
                _scores(gen, groups, group_size), group_size, tags=("flat",), about=f"{groups} groups of {group_size}"
            )
        )
    # N not a multiple of group_size.
    for n, group_size in ((10, 4), (7, 2), (3, 4)):
        out.append(gen.case(gen.randn(n), group_size, tags=("not-multiple",), about=f"N={n}, group_size={group_size}"))
    out.append(gen.case(gen.randn(6), 1, tags=("bad-argument",), about="group_size=1 (a group needs 2 answers)"))
    out.append(gen.case(gen.randn(8), 4, kwargs={"eps": -1e-3}, tags=("bad-argument",), about="eps=-1e-3"))
    # Dtypes and device.
    # Scores on a 1/8 grid in [-2, 2]: group means and deviations are exact in bfloat16, so a
    # solution that computes in bfloat16 agrees with the float32 reference.
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        grid = torch.round(gen.randn(12, dtype=torch.float64).clamp(-2, 2) * 8) / 8
        out.append(gen.case(grid.to(dtype), 4, tags=("dtype",), about=f"{dtype} scores, 3 groups of 4"))
    ints = torch.randint(0, 5, (12,), generator=gen.generator)
    ints[:4] = torch.tensor([0, 1, 2, 4])
    out.append(gen.case(ints, 4, tags=("dtype", "int"), about="int64 scores, 3 groups of 4 (float32 result)"))
    out.append(
        gen.case(
            _scores(gen, 3, 4),
            4,
            kwargs={"eps": 1e-3},
            tags=("inplace",),
            return_inputs=True,
            about="scores checked after the call",
        )
    )
    # Built last, so the cases before it keep their ids and draws.
    out.append(
        gen.case(
            gen.randn(8), 0, tags=("bad-argument",), about="group_size=0 (a ValueError, never a ZeroDivisionError)"
        )
    )
    # 2-D scores, already grouped: [4, 4] with group_size=4. Both shape[0] and numel() are
    # multiples of group_size, so only a dimension check refuses it. Built last (issue 37).
    out.append(
        gen.case(
            _scores(gen, 4, 4).reshape(4, 4),
            4,
            tags=("bad-argument", "not-1d"),
            about="scores of shape [4, 4] (2-D, already grouped), group_size=4",
        )
    )
    return out


@check("advantages on random scores (group sizes 3, 4, 8; 0/1 rewards)", 20, core=True)
def values_random(ctx: CheckContext) -> None:
    expect_advantages(ctx, ctx.cases("random"))


@check("scale_by_std=False only subtracts the group mean", 10)
def values_no_std(ctx: CheckContext) -> None:
    expect_advantages(ctx, ctx.cases("nostd"))


@check("a group of all-equal scores gets 0, not NaN", 12)
def all_equal(ctx: CheckContext) -> None:
    for case in ctx.cases("all-equal"):
        got = require_tensor(ctx.got(case), case, (), "advantages")
        # isnan reads any floating dtype as it is: no float64 copy of a learner's (possibly huge) tensor
        nan = torch.isnan(got) if got.is_floating_point() else torch.zeros((), dtype=torch.bool)
        if nan.any():
            first = [int(i) for i in nan.nonzero()[0]]
            raise CheckFailed(
                f"NaN advantages {where(case)}, first at {first}: a group whose scores are all equal has std 0; "
                "(score - mean) / (std + eps) is then 0 / eps = 0. Add eps to the std, and give a group whose "
                "scores are all equal exactly 0 (its float mean can be a rounding step off)."
            )
        expect_advantages(ctx, [case])


@check(
    "eps added to the std, outside the square root (eps=0.5; near-tied groups)",
    10,
    announce=(
        "eps added to the std, outside the square root (eps=0.5; near-tied groups)",
        "the tolerance grows by the group's cancellation factor",
    ),
)
def eps_outside(ctx: CheckContext) -> None:
    expect_advantages(ctx, ctx.cases("eps"))


@check("unbiased std (Bessel's correction) in groups of 2 and 3", 8)
def unbiased(ctx: CheckContext) -> None:
    expect_advantages(ctx, ctx.cases("unbiased"))


@check("groups are consecutive runs of group_size scores", 8)
def consecutive(ctx: CheckContext) -> None:
    expect_advantages(ctx, ctx.cases("consecutive"))


@check("result is a flat [N] tensor in the order of scores", 6)
def flat(ctx: CheckContext) -> None:
    for case in ctx.cases("flat"):
        got = require_tensor(ctx.got(case), case, (), "advantages")
        n = case.args[0].shape[0]
        if list(got.shape) != [n]:
            raise CheckFailed(
                f"Expected advantages of shape [{n}] (one per score), got shape {list(got.shape)} "
                f"{where(case)}: flatten the [N // group_size, group_size] view back."
            )
        expect_advantages(ctx, [case])


@check(
    "ValueError when N is not a multiple of group_size, for group_size < 2, or a negative eps",
    10,
    gated=True,
    announce=(
        "ValueError when N is not a multiple of group_size, for group_size < 2, or a negative eps",
        "group_size=0 included: a ValueError, never a ZeroDivisionError",
        "and for scores that are not 1-D (a [4, 4] tensor included)",
    ),
)
def not_multiple(ctx: CheckContext) -> None:
    arguments = [c for c in ctx.cases("not-multiple") + ctx.cases("bad-argument") if "not-1d" not in c.tags]
    expect_value_error(
        ctx,
        arguments,
        returned=(
            "Expected ValueError {where}: N must be a multiple of group_size, group_size at least 2 and eps "
            "not negative, but the call returned normally."
        ),
        raised="Expected ValueError {where}, got {error}. Check N % group_size yourself.",
    )
    expect_value_error(
        ctx,
        ctx.cases("not-1d"),
        returned=(
            "Expected ValueError {where}: scores must be a flat [N] tensor (check scores.dim() == 1), but the "
            "call returned normally: reshaping 2-D scores into groups hides a caller's mistake."
        ),
        raised="Expected ValueError {where}, got {error}. Check scores.dim() == 1 yourself.",
    )


@check(
    "result in the scores' dtype (float32, float64, bfloat16; float32 for integer scores) and device", 10, gated=True
)
def dtype_device(ctx: CheckContext) -> None:
    for case in ctx.cases("dtype"):
        if "int" not in case.tags:
            expect_dtype_device(ctx, [case], what="advantages")
            continue
        got = require_tensor(ctx.got(case), case, (), "advantages")
        if got.dtype != torch.float32:
            raise CheckFailed(f"Expected float32 advantages for integer scores {where(case)}, got {got.dtype}.")
        expect_advantages(ctx, [case])


@check("scores not modified in place", 6, gated=True, self_reported="in-place edits")
def no_inplace(ctx: CheckContext) -> None:
    expect_inputs_unchanged(ctx, ctx.cases("inplace"))
