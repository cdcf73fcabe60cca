"""Cases and weighted checks for `actor-loss`."""

from __future__ import annotations

import math

import torch

from exercises.actor_loss.spec import SPEC
from exercises.common import (
    expect_dtype_device,
    expect_grads,
    expect_inputs_unchanged,
    expect_memory_within_budget,
    expect_value_error,
    expect_values,
)
from exercises.compare import require_no_error, where
from exercises.framework import Case, CaseGen, CheckContext, CheckFailed, check

CLIP_RANGES = (0.2, 0.1, 0.3, 0.05)


def _log_probs(gen: CaseGen, *shape: int, dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """Old and new log-probs whose ratios straddle the clip boundaries."""
    old = gen.randn(*shape, dtype=torch.float64, scale=0.5) - 2.0
    new = old + gen.randn(*shape, dtype=torch.float64, scale=0.3)
    return new.to(dtype), old.to(dtype)


#: (ratio, advantage) pairs planted in every random case, so that each side of the clip is
#: decided on every seed: beyond the range with and against A, on both sides, and inside it.
_DECISIVE = ((1.6, 1.0), (0.5, -1.0), (1.6, -1.0), (0.5, 1.0), (1.05, 0.7), (0.97, -0.6))


def _plant(new: torch.Tensor, old: torch.Tensor, adv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The random case with its first elements set to the decisive pairs (values vary elsewhere)."""
    new, adv = new.clone(), adv.clone()
    for i, (ratio, a) in enumerate(_DECISIVE):
        new.view(-1)[i] = old.view(-1)[i] + math.log(ratio)
        adv.view(-1)[i] = a
    return new, adv


def _point(gen: CaseGen, ratio: float, adv: float, clip: float, tags: tuple[str, ...]) -> Case:
    new = torch.tensor([math.log(ratio)], dtype=torch.float64)
    return gen.case(
        new,
        torch.zeros(1, dtype=torch.float64),
        torch.tensor([adv], dtype=torch.float64),
        kwargs={"clip_range": clip},
        tags=tags,
        grad=("0",),
        backward=[],
        about=f"ratio={ratio:g}, advantage={adv:+g}, clip_range={clip:g}",
    )


def cases(gen: CaseGen) -> list[Case]:
    """Every input the checks read, built from the run's seed."""
    out: list[Case] = []
    for i, clip in enumerate(CLIP_RANGES):
        b, t = gen.randint(2, 6), gen.randint(3, 17)
        new, old = _log_probs(gen, b, t)
        new, adv = _plant(new, old, gen.randn(b, t))
        tags = ("random", "default-clip") if clip == 0.2 else ("random", "custom-clip")
        out.append(
            gen.case(
                new,
                old,
                adv,
                kwargs={"clip_range": clip},
                tags=tags,
                grad=("0",),
                backward=[],
                about=f"random case {i + 1}",
            )
        )
    # Worked values, the clipped sides and the unclipped sides, for both signs of A.
    for clip in (0.2, 0.1):
        eps = clip
        for ratio, point_adv, side in (
            (2.0, 1.0, "clipped"),
            (1 + eps + 0.05, 1.0, "clipped"),
            (0.5, -1.0, "clipped"),
            (1 - eps - 0.05, -1.0, "clipped"),
            (2.0, -1.0, "unclipped"),
            (1 + eps + 0.05, -1.0, "unclipped"),
            (0.5, 1.0, "unclipped"),
            (1 - eps - 0.05, 1.0, "unclipped"),
            (1.0 + eps / 2, 1.0, "inside"),
            (1.0 - eps / 2, -1.0, "inside"),
        ):
            out.append(_point(gen, ratio, point_adv * (1 + gen.randint(0, 3)), clip, ("point", side)))
    # Half the elements clipped: their gradient must be exactly zero.
    new, old = _log_probs(gen, 3, 8)
    new = old + torch.linspace(-0.6, 0.6, 24).reshape(3, 8)
    out.append(
        gen.case(
            new, old, gen.randn(3, 8), tags=("clipped-grad",), grad=("0",), backward=[], about="ratios from 0.55 to 1.8"
        )
    )
    # Shape contract.
    new, old = _log_probs(gen, 4, 5)
    adv = gen.randn(4, 5)
    for bad in (
        (new, old, adv[:, 0]),
        (new, old, adv[:, :1]),
        (new, old.t().contiguous(), adv),
        (new, old[:3], adv[:3]),
    ):
        out.append(gen.case(*bad, tags=("shape",), about="mismatched shapes"))
    # Dtypes, device, 0-dim; in-place edits; any leading shape.
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        new, old = _log_probs(gen, 3, 7, dtype=dtype)
        out.append(gen.case(new, old, gen.randn(3, 7, dtype=dtype), tags=("dtype",), about=f"{dtype} inputs"))
    new, old = _log_probs(gen, 5, 9)
    out.append(
        gen.case(
            new,
            old,
            gen.randn(5, 9),
            kwargs={"clip_range": 0.15},
            tags=("inplace",),
            return_inputs=True,
            about="inputs checked after the call",
        )
    )
    for shape in ((11,), (2, 3, 4)):
        new, old = _log_probs(gen, *shape)
        out.append(
            gen.case(
                new,
                old,
                gen.randn(*shape),
                kwargs={"clip_range": 0.25},
                tags=("any-shape",),
                grad=("0",),
                backward=[],
                about=f"{len(shape)}-D inputs",
            )
        )
    # Memory: forward and backward on 2M elements, after a small warm-up call.
    small_new, small_old = _log_probs(gen, 2, 3)
    warm = gen.case(small_new, small_old, gen.randn(2, 3), grad=("0",), backward=[], about="warm-up")
    big_new = gen.generated(16, 32768, scale=0.6, shift=-2.0)
    big_old = gen.generated(16, 32768, scale=0.5, shift=-2.0)
    out.append(
        gen.case(
            big_new,
            big_old,
            gen.generated(16, 32768),
            tags=("memory",),
            grad=("0",),
            backward=[],
            memory=True,
            warmup=warm,
            about="a large input",
        )
    )
    return out


@check("value on random inputs (default clip_range)", 14, core=True)
def values_default(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("random", "default-clip"), what="loss")


@check("value with non-default clip_range", 10)
def values_custom_clip(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("random", "custom-clip"), what="loss")


@check("clipped side: ratio beyond 1 +/- clip_range in the advantage's direction", 12)
def clipped_side(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("point", "clipped"), what="loss")


@check("unclipped side: ratio beyond the range against the advantage, and inside it", 10)
def unclipped_side(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("point", "unclipped") + ctx.cases("point", "inside"), what="loss")


@check("gradient with respect to log_probs_new", 14)
def gradient(ctx: CheckContext) -> None:
    expect_grads(ctx, ctx.cases("random") + ctx.cases("point"), name="log_probs_new")


@check("zero gradient where the clipped term is the minimum", 8)
def zero_grad_where_clipped(ctx: CheckContext) -> None:
    for case in ctx.cases("clipped-grad"):
        got = ctx.got(case)
        require_no_error(got, case)
        grad = got.grads.get("0")
        if grad is None:
            raise CheckFailed(f"No gradient reached log_probs_new {where(case)}.")
        new, old, adv = case.args
        ratio = torch.exp(new - old)
        clipped = ((ratio > 1.2) & (adv > 0)) | ((ratio < 0.8) & (adv < 0))
        leaked = grad[clipped].abs() > 1e-7
        if leaked.any():
            raise CheckFailed(
                f"{int(leaked.sum())} of {int(clipped.sum())} clipped elements still get a gradient {where(case)}; "
                "where the clipped term is the minimum the element's gradient must be 0 (take the minimum of "
                "ratio * A and clamp(ratio) * A; do not clip after the minimum or clamp the advantage)."
            )
        expect_grads(ctx, [case], name="log_probs_new")


@check("ValueError on mismatched shapes (no broadcasting)", 7, gated=True)
def shape_errors(ctx: CheckContext) -> None:
    expect_value_error(ctx, ctx.cases("shape"))


@check("0-dim result in the inputs' dtype (float32, float64, bfloat16) and device", 8, gated=True)
def dtype_device(ctx: CheckContext) -> None:
    expect_dtype_device(ctx, ctx.cases("dtype"), what="loss", zero_dim=True)


@check("inputs not modified in place", 5, gated=True, self_reported="in-place edits")
def no_inplace(ctx: CheckContext) -> None:
    expect_inputs_unchanged(ctx, ctx.cases("inplace"))


@check("any leading shape (1-D and 3-D inputs)", 4)
def any_shape(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("any-shape"), what="loss")
    expect_grads(ctx, ctx.cases("any-shape"), name="log_probs_new")


@check("peak memory on a 16 x 32768 input within budget", 8, memory=True)
def memory(ctx: CheckContext) -> None:
    for case in ctx.cases("memory"):
        expect_memory_within_budget(
            ctx,
            case,
            SPEC.memory_budget,
            fix=(
                "Compute in the inputs' dtype: a float64 copy (or several full-size temporaries) of a large input is "
                "what goes over; build the loss from ratio, clamp and min without .double()."
            ),
        )
