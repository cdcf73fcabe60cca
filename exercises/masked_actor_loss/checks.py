"""Cases and weighted checks for `masked-actor-loss`."""

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
from exercises.framework import Case, CaseGen, CheckContext, check

SEQ, TOK = "seq-mean-token-mean", "token-mean"


def _inputs(
    gen: CaseGen, mask: torch.Tensor, dtype: torch.dtype = torch.float32, garbage: float = 3.0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """New/old log-probs whose ratios straddle the clip range, advantages, and non-zero
    garbage (of scale ``garbage``) at every padded position of all three."""
    b, t = mask.shape
    old = gen.randn(b, t, dtype=torch.float64, scale=0.5) - 2.0
    new = old + gen.randn(b, t, dtype=torch.float64, scale=0.3)
    adv = gen.randn(b, t, dtype=torch.float64)
    valid = mask != 0
    out = []
    for x in (new, old, adv):
        junk = gen.uniform(b, t, low=-garbage, high=garbage, dtype=torch.float64) + garbage * torch.sign(
            gen.randn(b, t, dtype=torch.float64)
        )
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
    mode: str | None,
    tags: tuple[str, ...],
    about: str,
    clip: float | None = None,
    dtype: torch.dtype = torch.float32,
    garbage: float = 3.0,
    shape: tuple[int, int] | None = None,
    **fields: Any,
) -> Case:
    if mask is not None:
        b, t = mask.shape
    else:
        assert shape is not None, "a case without a mask needs its shape"
        b, t = shape
    new, old, adv = _inputs(gen, mask if mask is not None else torch.ones(b, t), dtype, garbage)
    kwargs: dict[str, Any] = {}
    if mask is not None:
        kwargs["action_mask"] = mask
    if clip is not None:
        kwargs["clip_range"] = clip
    if mode is not None:
        kwargs["loss_agg_mode"] = mode
    fields.setdefault("grad", ("0",))
    fields.setdefault("backward", [])
    return gen.case(new, old, adv, kwargs=kwargs, tags=tags, about=about, **fields)


def cases(gen: CaseGen) -> list[Case]:
    """Every input the checks read, built from the run's seed."""
    out: list[Case] = []
    for mode, tag in ((None, "seq"), (SEQ, "seq"), (TOK, "tok"), (TOK, "tok")):
        b, t = gen.randint(3, 7), gen.randint(5, 17)
        label = mode or f"{SEQ} (default)"
        out.append(_case(gen, _mask(gen, b, t), mode, ("random", tag), f"random padded batch, {label}"))
    for mode, tag in ((SEQ, "seq"), (TOK, "tok")):
        b, t = gen.randint(3, 6), gen.randint(4, 12)
        bool_mask = _mask(gen, b, t).bool()
        out.append(_case(gen, bool_mask, mode, ("random", tag), f"bool action_mask, {mode}"))
        out.append(_case(gen, None, mode, ("random", tag), f"action_mask=None, {mode}", shape=(b, t)))
    for clip in (0.1, 0.3):
        for mode, tag in ((SEQ, "seq"), (TOK, "tok")):
            b, t = gen.randint(3, 6), gen.randint(4, 14)
            out.append(
                _case(gen, _mask(gen, b, t), mode, ("custom-clip", tag), f"clip_range={clip}, {mode}", clip=clip)
            )
    # Edge rows: length-1 rows; a row with no valid token; a batch with no valid token at all.
    for mode in (SEQ, TOK):
        t = gen.randint(4, 9)
        out.append(_case(gen, _mask(gen, 4, t, lengths=[1, 1, t, 2]), mode, ("edge",), f"length-1 rows, {mode}"))
        out.append(
            _case(
                gen,
                _mask(gen, 4, t, lengths=[t, 0, 2, 1]),
                mode,
                ("edge", "empty-row"),
                f"row 1 has no valid token, {mode}",
            )
        )
        out.append(
            _case(
                gen,
                _mask(gen, 3, t, lengths=[0, 0, 0]),
                mode,
                ("edge", "empty-row"),
                f"no valid token in the whole batch, {mode}",
            )
        )
    # Large values at padding: exp overflows to inf there, and inf * 0 = NaN if the mask multiplies.
    # Decided on every seed: new - old is about +200 at every padded position (exp overflows in
    # every dtype) and the advantage there is negative, so -min(inf * A, ...) is +inf before the mask.
    for mode in (SEQ, TOK):
        b, t = 4, gen.randint(6, 12)
        case = _case(
            gen, _mask(gen, b, t), mode, ("large-padding",), f"padded positions hold log-probs near +/-100, {mode}"
        )
        new, old, adv = case.args
        pad = case.kwargs["action_mask"] == 0
        new = torch.where(pad, 100.0 + gen.uniform(b, t), new)
        old = torch.where(pad, -100.0 - gen.uniform(b, t), old)
        adv = torch.where(pad, -1.0 - gen.uniform(b, t), adv)
        case.args = [new, old, adv]
        out.append(case)
    # Unknown aggregation modes.
    mask = _mask(gen, 3, 6)
    for bad_mode in ("token-sum", "seq-mean-token-sum", "mean", "Token-Mean"):
        out.append(_case(gen, mask, bad_mode, ("bad-mode",), f"loss_agg_mode={bad_mode!r}", grad=(), backward=None))
    # Shape contract.
    mask = _mask(gen, 4, 5)
    new, old, adv = _inputs(gen, mask)
    for bad, kw, what in (
        ((new, old, adv[:, :1]), {"action_mask": mask}, "advantages [4, 1]"),
        ((new, old, adv[:, 0]), {"action_mask": mask}, "advantages [4]"),
        ((new, old[:, :4], adv), {"action_mask": mask}, "log_probs_old [4, 4]"),
        ((new, old, adv), {"action_mask": mask[:, :1]}, "action_mask [4, 1]"),
        ((new, old, adv), {"action_mask": mask[0]}, "action_mask [5]"),
    ):
        out.append(gen.case(*bad, kwargs=kw, tags=("shape",), about=f"mismatched shapes: {what}"))
    # Dtypes, device, 0-dim; in-place edits.
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        for mode in (SEQ, TOK):
            mask = _mask(gen, 3, 7).to(dtype)
            out.append(
                _case(gen, mask, mode, ("dtype",), f"{dtype} inputs, {mode}", dtype=dtype, grad=(), backward=None)
            )
    for mode in (SEQ, TOK):
        out.append(
            _case(
                gen,
                _mask(gen, 5, 9),
                mode,
                ("inplace",),
                f"inputs checked after the call, {mode}",
                clip=0.15,
                return_inputs=True,
            )
        )
    return out


@check("seq-mean-token-mean (the default): masked mean per row, then mean over the batch", 16, core=True)
def values_seq(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("random", "seq"), what="loss")


@check("token-mean: sum over all valid tokens divided by their count", 14, core=True)
def values_token(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("random", "tok"), what="loss")


@check("non-default clip_range, both modes", 8)
def values_custom_clip(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("custom-clip"), what="loss")


@check("edge rows: length-1 rows, and rows with no valid token (they add 0 to the batch mean, never NaN)", 12)
def edge_rows(ctx: CheckContext) -> None:
    expect_empty_rows_add_zero(ctx, ctx.cases("edge"), "log_probs_new", "; for token-mean, clamp the total count too")


@check("large values at padded positions do not leak (no inf * 0 = NaN)", 6)
def large_padding(ctx: CheckContext) -> None:
    expect_padding_does_not_leak(ctx, ctx.cases("large-padding"), "log_probs_new", "exp(new - old) overflows")


@check("gradient with respect to log_probs_new, both modes (zero at padding)", 14)
def gradient(ctx: CheckContext) -> None:
    expect_grads(ctx, ctx.cases("random") + ctx.cases("custom-clip"), name="log_probs_new")


@check("ValueError for an unknown loss_agg_mode", 8, gated=True)
def bad_mode(ctx: CheckContext) -> None:
    only = f"Only {SEQ!r} and {TOK!r} are accepted; do not fall back silently to one of them."
    expect_value_error(
        ctx,
        ctx.cases("bad-mode"),
        returned="Expected ValueError for an unknown loss_agg_mode {where}, but the call returned normally. " + only,
        raised="Expected ValueError for an unknown loss_agg_mode {where}, but got {error}. " + only,
    )


@check("ValueError on mismatched shapes (no broadcasting)", 8, gated=True)
def shape_errors(ctx: CheckContext) -> None:
    expect_value_error(ctx, ctx.cases("shape"))


@check("0-dim result in the inputs' dtype (float32, float64, bfloat16) and device", 8, gated=True)
def dtype_device(ctx: CheckContext) -> None:
    expect_dtype_device(ctx, ctx.cases("dtype"), what="loss", zero_dim=True)


@check("inputs not modified in place", 6, gated=True, self_reported="in-place edits")
def no_inplace(ctx: CheckContext) -> None:
    expect_inputs_unchanged(ctx, ctx.cases("inplace"))
