"""Cases and weighted checks for `rloo-advantages` (points add up to 100)."""

from __future__ import annotations

import torch

from exercises.common import (
    expect_detached,
    expect_dtype_device,
    expect_inputs_unchanged,
    expect_value_error,
    expect_values,
)
from exercises.framework import Case, CaseGen, CheckContext, check


def _scores(gen: CaseGen, groups: int, k: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Scores whose groups sit at different levels, so a baseline from the wrong group shows."""
    offsets = gen.randn(groups, 1, dtype=torch.float64, scale=3.0)
    return (offsets + gen.randn(groups, k, dtype=torch.float64)).reshape(-1).to(dtype)


def cases(gen: CaseGen) -> list[Case]:
    """Every input the checks read, built from the run's seed."""
    out: list[Case] = []
    for k in (3, 4, 8):
        groups = gen.randint(2, 6)
        out.append(gen.case(_scores(gen, groups, k), k, tags=("values",), about=f"{groups} groups of {k}"))
    out.append(gen.case(_scores(gen, 4, 2), 2, tags=("pairs",), about="4 groups of 2 (A = s_i - s_j)"))
    out.append(gen.case(_scores(gen, 1, 5), 5, tags=("one-group",), about="a single group of 5"))
    for scores, k, about in ((gen.randn(7), 3, "7 scores, group_size=3"), (gen.randn(4), 1, "group_size=1"),
                             (gen.randn(4), 0, "group_size=0"), (gen.randn(2, 4), 2, "scores [2, 4] (not 1-D)")):
        out.append(gen.case(scores, k, tags=("invalid",), about=about))
    # Scores on a 1/8 grid keep a bfloat16 computation within its tolerance of the reference's.
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        scores = torch.round(_scores(gen, 2, 4, torch.float64).clamp(-8, 8) * 8) / 8
        out.append(gen.case(scores.to(dtype), 4, tags=("dtype",), about=f"{dtype} scores"))
    out.append(gen.case(_scores(gen, 3, 4), 4, tags=("detach",), grad=("0",), probes=((),),
                        about="scores requires grad"))
    out.append(gen.case(_scores(gen, 3, 4), 4, tags=("inplace",), return_inputs=True,
                        about="scores checked after the call"))
    return out


@check("leave-one-out advantages on random groups of 3, 4 and 8", 35, core=True)
def values(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("values"), what="advantages")


@check("groups of 2: each advantage is s_i - s_j", 15, core=True)
def pairs(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("pairs"), what="advantages")


@check("a single group (N = group_size)", 10)
def one_group(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("one-group"), what="advantages")


@check("ValueError for N not a multiple of group_size, group_size < 2, scores not 1-D", 10, gated=True)
def invalid(ctx: CheckContext) -> None:
    expect_value_error(ctx, ctx.cases("invalid"),
                       returned="Expected ValueError {where}, but the call returned normally.",
                       raised="Expected ValueError {where}, got {error}")


@check("advantages in the scores' dtype (float32, float64, bfloat16) and device", 10, gated=True)
def dtype_device(ctx: CheckContext) -> None:
    expect_dtype_device(ctx, ctx.cases("dtype"), what="advantages")


@check("advantages detached even when scores requires grad", 10, gated=True, reads=("probes",))
def detached(ctx: CheckContext) -> None:
    expect_detached(ctx, ctx.cases("detach"), [()], ["the advantages"])


@check("scores not modified in place", 10, gated=True)
def no_inplace(ctx: CheckContext) -> None:
    expect_inputs_unchanged(ctx, ctx.cases("inplace"))
