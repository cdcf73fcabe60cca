"""Cases and weighted checks for `pairwise-loss`."""

from __future__ import annotations

from typing import Any, Literal

import torch

from exercises.common import (
    expect_dtype_device,
    expect_grads,
    expect_inputs_unchanged,
    expect_value_error,
    expect_values,
)
from exercises.framework import Case, CaseGen, CheckContext, check

GRAD = ("0", "1")


def _rewards(
    gen: CaseGen, *shape: int, dtype: torch.dtype = torch.float32, scale: float = 2.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Chosen and rejected scores: correlated, with gaps of both signs."""
    base = gen.randn(*shape, dtype=torch.float64, scale=scale)
    chosen = base + gen.randn(*shape, dtype=torch.float64, scale=1.5) + 0.5
    return chosen.to(dtype), base.to(dtype)


def _case(
    gen: CaseGen,
    chosen: torch.Tensor,
    rejected: torch.Tensor,
    margin: float | torch.Tensor | None = None,
    *,
    tags: tuple[str, ...],
    about: str,
    grad: bool = True,
    **fields: Any,
) -> Case:
    kwargs = {} if margin is None else {"margin": margin}
    if grad:
        fields.update(grad=GRAD, backward=[])
    return gen.case(chosen, rejected, kwargs=kwargs, tags=tags, about=about, **fields)


def cases(gen: CaseGen) -> list[Case]:
    """Every input the checks read, built from the run's seed."""
    out: list[Case] = []
    for i in range(3):
        c, r = _rewards(gen, gen.randint(4, 17))
        out.append(_case(gen, c, r, tags=("random", "no-margin"), about=f"random pairs {i + 1}, no margin"))
    for i, m in enumerate((0.5 + gen.randint(0, 4) * 0.25, 2.0 + gen.randint(0, 4) * 0.5)):
        c, r = _rewards(gen, gen.randint(4, 17))
        out.append(_case(gen, c, r, m, tags=("random", "float-margin"), about=f"random pairs {i + 1}, float margin"))
    c, r = _rewards(gen, gen.randint(4, 17))
    scalar = torch.tensor(1.0 + gen.randint(0, 4) * 0.25)
    out.append(_case(gen, c, r, scalar, tags=("random", "float-margin"), about="random pairs, 0-dim tensor margin"))
    for i in range(2):
        b = gen.randint(4, 17)
        c, r = _rewards(gen, b)
        margin = gen.uniform(b, low=0.0, high=3.0)
        out.append(
            _case(gen, c, r, margin, tags=("random", "tensor-margin"), about=f"random pairs {i + 1}, per-pair margin")
        )
    # Hand-worked values: gap 0 (log 2), gap +1, gap -1, gap +1 with margin 1 (log 2 again).
    f64 = torch.float64
    out.append(
        _case(
            gen,
            torch.tensor([1.0, -3.0], dtype=f64),
            torch.tensor([1.0, -3.0], dtype=f64),
            tags=("point",),
            about="equal rewards (loss log 2)",
        )
    )
    out.append(
        _case(
            gen,
            torch.tensor([2.0, 0.0], dtype=f64),
            torch.tensor([1.0, 1.0], dtype=f64),
            tags=("point",),
            about="gaps +1 and -1",
        )
    )
    out.append(
        _case(
            gen,
            torch.tensor([2.0, 0.5], dtype=f64),
            torch.tensor([1.0, -0.5], dtype=f64),
            1.0,
            tags=("point",),
            about="gaps +1 with margin=1.0 (loss log 2)",
        )
    )
    out.append(
        _case(
            gen,
            torch.tensor([3.0, 1.0, 0.0], dtype=f64),
            torch.tensor([1.0, 1.0, 1.0], dtype=f64),
            torch.tensor([1.0, -1.0, 0.5], dtype=f64),
            tags=("point",),
            about="per-pair margins 1, -1, 0.5",
        )
    )
    # Large gaps in float32: -logsigmoid(-200) = 200 exactly; log(sigmoid(-200)) is log(0).
    chosen = torch.tensor([0.0, 10.0, 50.0, -100.0, 3.0, 1.0])
    rejected = torch.tensor([200.0, 130.0, -150.0, 100.0, 2.0, -1.0])
    out.append(_case(gen, chosen, rejected, tags=("stable",), about="gaps -200, -120, +200, -200, +1, +2 (float32)"))
    out.append(
        _case(
            gen,
            torch.tensor([5.0, -20.0, 0.0]),
            torch.tensor([-5.0, 30.0, 0.0]),
            150.0,
            tags=("stable",),
            about="gaps +10, -50, 0 with margin=150.0 (float32)",
        )
    )
    out.append(
        _case(
            gen,
            torch.tensor([1.0, 2.0, 300.0]),
            torch.tensor([0.0, 0.0, 0.0]),
            torch.tensor([250.0, 0.0, 100.0]),
            tags=("stable",),
            about="per-pair margins 250, 0, 100 (float32)",
        )
    )
    # Shape contract: rewards and a tensor margin.
    b = gen.randint(3, 8)
    c, r = _rewards(gen, b)
    for bad in (
        (c, r[:-1], None),
        (c, r.unsqueeze(1), None),
        (c.unsqueeze(1), r, None),
        (c, r, torch.ones(b - 1)),
        (c, r, torch.ones(b, 1)),
        (c, r, torch.ones(1)),
    ):
        out.append(_case(gen, *bad, tags=("shape",), about="mismatched shapes", grad=False))
    # Dtypes and device.
    dtype_margins: tuple[tuple[torch.dtype, float | Literal["tensor"] | None], ...] = (
        (torch.float32, None),
        (torch.float64, 0.75),
        (torch.bfloat16, "tensor"),
    )
    for dtype, margin_kind in dtype_margins:
        b = gen.randint(4, 12)
        c, r = _rewards(gen, b, dtype=dtype)
        dtype_margin = gen.uniform(b, high=2.0, dtype=dtype) if margin_kind == "tensor" else margin_kind
        out.append(_case(gen, c, r, dtype_margin, tags=("dtype",), about=f"{dtype} inputs", grad=False))
    # In-place edits.
    b = gen.randint(4, 12)
    c, r = _rewards(gen, b)
    out.append(
        _case(
            gen,
            c,
            r,
            gen.uniform(b, high=2.0),
            tags=("inplace",),
            about="inputs checked after the call",
            grad=False,
            return_inputs=True,
        )
    )
    # Any shape.
    c, r = _rewards(gen, 3, 5)
    out.append(_case(gen, c, r, tags=("any-shape",), about="2-D rewards [3, 5]"))
    c, r = _rewards(gen, 2, 3, 4)
    out.append(
        _case(
            gen,
            c,
            r,
            gen.uniform(2, 3, 4, high=2.0),
            tags=("any-shape",),
            about="3-D rewards [2, 3, 4], per-pair margin",
        )
    )
    return out


@check("value on random pairs without a margin", 14, core=True)
def values_no_margin(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("random", "no-margin"), what="loss")


@check("value with a scalar margin (a float or a 0-dim tensor)", 10)
def values_float_margin(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("random", "float-margin"), what="loss")


@check("value with a per-pair tensor margin", 10)
def values_tensor_margin(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("random", "tensor-margin"), what="loss")


@check("hand-worked values (log 2 at equal rewards, margins)", 6)
def worked_values(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("point"), what="loss")


@check("finite and exact for gaps of hundreds (float32)", 14)
def stable(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("stable"), what="loss")
    expect_grads(ctx, ctx.cases("stable"), arg="0", name="chosen_rewards")


@check("gradient with respect to chosen_rewards and rejected_rewards", 12)
def gradient(ctx: CheckContext) -> None:
    picked = ctx.cases("random") + ctx.cases("point")
    expect_grads(ctx, picked, arg="0", name="chosen_rewards")
    expect_grads(ctx, picked, arg="1", name="rejected_rewards")


@check("ValueError on mismatched shapes of the rewards or a tensor margin (no broadcasting)", 10, gated=True)
def shape_errors(ctx: CheckContext) -> None:
    expect_value_error(ctx, ctx.cases("shape"))


@check("0-dim result in the inputs' dtype (float32, float64, bfloat16) and device", 9, gated=True)
def dtype_device(ctx: CheckContext) -> None:
    expect_dtype_device(ctx, ctx.cases("dtype"), what="loss", zero_dim=True)


@check("inputs not modified in place", 5, gated=True, self_reported="in-place edits")
def no_inplace(ctx: CheckContext) -> None:
    expect_inputs_unchanged(ctx, ctx.cases("inplace"))


@check("any shape (2-D and 3-D rewards): mean over every element", 10)
def any_shape(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("any-shape"), what="loss")
    expect_grads(ctx, ctx.cases("any-shape"), arg="0", name="chosen_rewards")
