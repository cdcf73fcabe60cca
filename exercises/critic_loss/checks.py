"""Cases and weighted checks for `critic-loss`."""

from __future__ import annotations

from typing import Any

import torch

from exercises.common import (
    expect_dtype_device,
    expect_empty_rows_add_zero,
    expect_grads,
    expect_inputs_unchanged,
    expect_padding_does_not_leak,
    expect_value_error,
    expect_values,
)
from exercises.compare import require_no_error, where
from exercises.framework import Case, CaseGen, CheckContext, CheckFailed, check


def _inputs(
    gen: CaseGen, mask: torch.Tensor, dtype: torch.dtype = torch.float32, garbage: float = 3.0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Old values, new values that move from them by more and less than a typical clip range,
    returns, and non-zero garbage (of scale ``garbage``) at every padded position of all three."""
    b, t = mask.shape
    old = gen.randn(b, t, dtype=torch.float64)
    values = old + gen.randn(b, t, dtype=torch.float64, scale=0.4)
    returns = old + gen.randn(b, t, dtype=torch.float64)
    valid = mask != 0
    out = []
    for x in (values, old, returns):
        junk = garbage * (1 + gen.uniform(b, t, dtype=torch.float64)) * torch.sign(gen.randn(b, t, dtype=torch.float64))
        out.append(torch.where(valid, x, junk).to(dtype))
    return out[0], out[1], out[2]


def _mask(gen: CaseGen, b: int, t: int, lengths: list[int] | None = None) -> torch.Tensor:
    """Right-padded mask whose rows really differ in length (some padding is guaranteed)."""
    if lengths is None:
        lengths = [gen.randint(1, t + 1) for _ in range(b)]
        lengths[gen.randint(0, b)] = t
        lengths[gen.randint(0, b)] = max(1, t // 3)
    return gen.right_padded_mask(b, t, lengths=lengths)


def _case(
    gen: CaseGen,
    mask: torch.Tensor | None,
    clip: float | None,
    tags: tuple[str, ...],
    about: str,
    dtype: torch.dtype = torch.float32,
    garbage: float = 3.0,
    shape: tuple[int, int] | None = None,
    pass_clip: bool = True,
    **fields: Any,
) -> Case:
    if mask is not None:
        b, t = mask.shape
    else:
        assert shape is not None, "a case without a mask needs its shape"
        b, t = shape
    values, old, returns = _inputs(gen, mask if mask is not None else torch.ones(b, t), dtype, garbage)
    kwargs: dict[str, Any] = {}
    if mask is not None:
        kwargs["mask"] = mask
    if pass_clip:
        kwargs["clip_range"] = clip
    fields.setdefault("grad", ("0", "1", "2"))
    fields.setdefault("backward", [])
    return gen.case(values, old, returns, kwargs=kwargs, tags=tags, about=about, **fields)


def cases(gen: CaseGen) -> list[Case]:
    """Every input the checks read, built from the run's seed."""
    out: list[Case] = []
    for i in range(2):
        b, t = gen.randint(3, 7), gen.randint(5, 17)
        out.append(
            _case(
                gen,
                _mask(gen, b, t),
                None,
                ("random", "unclipped"),
                f"random padded batch {i + 1}, no clip_range",
                pass_clip=i == 1,
            )
        )
    b, t = gen.randint(3, 6), gen.randint(4, 12)
    out.append(_case(gen, _mask(gen, b, t).bool(), None, ("random", "unclipped"), "bool mask, no clip_range"))
    out.append(_case(gen, None, None, ("random", "unclipped"), "mask=None, no clip_range", shape=(b, t)))
    for clip in (0.2, 0.5, 0.1):
        b, t = gen.randint(3, 7), gen.randint(5, 17)
        out.append(_case(gen, _mask(gen, b, t), clip, ("random", "clipped"), f"random padded batch, clip_range={clip}"))
    b, t = gen.randint(3, 6), gen.randint(4, 12)
    out.append(_case(gen, None, 0.2, ("random", "clipped"), "mask=None, clip_range=0.2", shape=(b, t)))
    out.append(_case(gen, _mask(gen, b, t).bool(), 0.3, ("random", "clipped"), "bool mask, clip_range=0.3"))
    out.append(_case(gen, _mask(gen, b, t), 0.0, ("clip-zero",), "clip_range=0.0 (the values may not move at all)"))
    # Edge rows: length-1 rows; a row with no valid token; a batch with no valid token at all.
    for maybe_clip in (None, 0.2):
        t = gen.randint(4, 9)
        out.append(
            _case(
                gen,
                _mask(gen, 4, t, lengths=[1, 1, t, 2]),
                maybe_clip,
                ("edge",),
                f"length-1 rows, clip_range={maybe_clip}",
            )
        )
        out.append(
            _case(
                gen,
                _mask(gen, 4, t, lengths=[t, 0, 2, 1]),
                maybe_clip,
                ("edge", "empty-row"),
                f"row 1 has no valid token, clip_range={maybe_clip}",
            )
        )
        out.append(
            _case(
                gen,
                _mask(gen, 3, t, lengths=[0, 0, 0]),
                maybe_clip,
                ("edge", "empty-row"),
                f"no valid token in the whole batch, clip_range={maybe_clip}",
            )
        )
    # Large values at padding: their squares overflow to inf, and inf * 0 = NaN if the mask multiplies.
    for maybe_clip in (None, 0.2):
        out.append(
            _case(
                gen,
                _mask(gen, 4, gen.randint(6, 12)),
                maybe_clip,
                ("large-padding",),
                f"padded positions hold values near +/-1e20, clip_range={maybe_clip}",
                garbage=1e20,
            )
        )
    # Shape contract.
    mask = _mask(gen, 4, 5)
    values, old, returns = _inputs(gen, mask)
    for bad, kw, what in (
        ((values, old, returns[:, :1]), {"mask": mask}, "returns [4, 1]"),
        ((values, old, returns[:, 0]), {"mask": mask}, "returns [4]"),
        ((values, old[:, :4], returns), {"mask": mask, "clip_range": 0.2}, "old_values [4, 4]"),
        ((values, old[:1], returns), {"mask": mask, "clip_range": 0.2}, "old_values [1, 5]"),
        ((values, old, returns), {"mask": mask[:, :1]}, "mask [4, 1]"),
        ((values, old, returns), {"mask": mask[0]}, "mask [5]"),
    ):
        out.append(gen.case(*bad, kwargs=kw, tags=("shape",), about=f"mismatched shapes: {what}"))
    # Dtypes, device, 0-dim; in-place edits.
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        for maybe_clip in (None, 0.2):
            mask = _mask(gen, 3, 7).to(dtype)
            out.append(
                _case(
                    gen,
                    mask,
                    maybe_clip,
                    ("dtype",),
                    f"{dtype} inputs, clip_range={maybe_clip}",
                    dtype=dtype,
                    grad=(),
                    backward=None,
                )
            )
    for maybe_clip in (None, 0.2):
        out.append(
            _case(
                gen,
                _mask(gen, 5, 9),
                maybe_clip,
                ("inplace",),
                f"inputs checked after the call, clip_range={maybe_clip}",
                return_inputs=True,
            )
        )
    return out


@check(
    "unclipped loss (clip_range=None): 0.5 x masked mean of (values - R)^2 per row, mean over the batch", 14, core=True
)
def values_unclipped(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("random", "unclipped"), what="loss")


@check("clipped loss: max of the clipped and unclipped errors, values clipped around old_values", 18, core=True)
def values_clipped(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("random", "clipped"), what="loss")


@check("clip_range=0.0 still clips (0 is a clip range, only None turns clipping off)", 4)
def clip_zero(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("clip-zero"), what="loss")


@check("edge rows: length-1 rows, and rows with no valid token (they add 0 to the batch mean, never NaN)", 10)
def edge_rows(ctx: CheckContext) -> None:
    expect_empty_rows_add_zero(ctx, ctx.cases("edge"), "values")


@check("large values at padded positions do not leak (no inf * 0 = NaN)", 6)
def large_padding(ctx: CheckContext) -> None:
    expect_padding_does_not_leak(ctx, ctx.cases("large-padding"), "values", "their squared error overflows")


@check("gradient with respect to values (zero at padding; zero where the clipped error is the larger)", 14)
def gradient(ctx: CheckContext) -> None:
    expect_grads(ctx, ctx.cases("random") + ctx.cases("clip-zero"), name="values")


@check(
    "no gradient to old_values or returns (they are targets, not parameters)",
    8,
    gated=True,
    reads=("grad-flows:1,2",),
    self_reported="gradient provenance",
)
def no_grad_to_targets(ctx: CheckContext) -> None:
    for case in ctx.cases("random") + ctx.cases("clip-zero"):
        got = ctx.got(case)
        require_no_error(got, case)
        for key, name in (("1", "old_values"), ("2", "returns")):
            grad = got.grads.get(key)
            if grad is not None and bool((grad != 0).any()):
                worst = float(grad.abs().max())
                raise CheckFailed(
                    f"A gradient reached {name} {where(case)} (largest magnitude {worst:.4g}); gradient must flow "
                    f"to values only: use {name}.detach() so the critic is not pulled towards moving its targets."
                )


@check("ValueError on mismatched shapes (no broadcasting)", 8, gated=True)
def shape_errors(ctx: CheckContext) -> None:
    expect_value_error(ctx, ctx.cases("shape"))


@check("0-dim result in the inputs' dtype (float32, float64, bfloat16) and device", 10, gated=True)
def dtype_device(ctx: CheckContext) -> None:
    expect_dtype_device(ctx, ctx.cases("dtype"), what="loss", zero_dim=True)


@check("inputs not modified in place", 8, gated=True, self_reported="in-place edits")
def no_inplace(ctx: CheckContext) -> None:
    expect_inputs_unchanged(ctx, ctx.cases("inplace"))
