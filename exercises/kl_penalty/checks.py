"""Cases and weighted checks for `kl-penalty`."""

from __future__ import annotations

import math
from typing import Any

import torch

from exercises.common import (
    expect_dtype_device,
    expect_grads,
    expect_inputs_unchanged,
    expect_value_error,
    expect_values,
)
from exercises.compare import explain_mismatch, require_no_error, require_tensor, where
from exercises.framework import Case, CaseGen, CheckContext, CheckFailed, check

KINDS = ("k1", "k2", "k3")


def _log_probs(gen: CaseGen, *shape: int, dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """Policy and reference log-probs (both <= 0) whose log-ratios are of order 1."""
    n = math.prod(shape)  # drawn flat, so that a 0-dim shape works too
    ref = -gen.uniform(n, low=0.05, high=4.0, dtype=torch.float64)
    lp = (ref + gen.randn(n, dtype=torch.float64, scale=0.8)).clamp(max=-1e-3)
    return lp.reshape(shape).to(dtype), ref.reshape(shape).to(dtype)


def _large_gaps(gen: CaseGen, b: int, t: int) -> tuple[torch.Tensor, torch.Tensor]:
    """float32 log-probs with log-ratios up to +/-200: half the rows have the reference far below
    the policy (log-probs near -200, whose exp underflows), half have gaps within +/-80."""
    lp = torch.empty(b, t, dtype=torch.float64)
    ref = torch.empty(b, t, dtype=torch.float64)
    for i in range(b):
        if i % 2 == 0:
            lp[i] = -gen.uniform(t, low=0.01, high=5.0, dtype=torch.float64)
            ref[i] = -gen.uniform(t, low=100.0, high=200.0, dtype=torch.float64)
        else:
            lp[i] = -gen.uniform(t, low=20.0, high=100.0, dtype=torch.float64)
            ref[i] = -gen.uniform(t, low=20.0, high=100.0, dtype=torch.float64)
    return lp.float(), ref.float()


def _weights(gen: CaseGen, shape: torch.Size, dtype: torch.dtype) -> torch.Tensor:
    return gen.randn(math.prod(shape), dtype=dtype).reshape(shape)


def _case(
    gen: CaseGen,
    lp: torch.Tensor,
    ref: torch.Tensor,
    kind: str | None,
    tags: tuple[str, ...],
    about: str,
    grad: bool = True,
    **fields: Any,
) -> Case:
    kwargs = {} if kind is None else {"kind": kind}
    if grad:
        fields.update(grad=("0",), backward=[], weights=_weights(gen, lp.shape, lp.dtype))
    return gen.case(lp, ref, kwargs=kwargs, tags=tags, about=about, **fields)


def cases(gen: CaseGen) -> list[Case]:
    """Every input the checks read, built from the run's seed."""
    out: list[Case] = []
    for kind in KINDS:
        for i in range(2):
            lp, ref = _log_probs(gen, gen.randint(2, 6), gen.randint(3, 17))
            out.append(_case(gen, lp, ref, kind, ("random", kind), f"random log-probs {i + 1}, kind={kind!r}"))
    lp, ref = _log_probs(gen, gen.randint(2, 6), gen.randint(3, 17))
    out.append(_case(gen, lp, ref, None, ("random", "k1"), "random log-probs, kind not given (k1 is the default)"))
    # Small log-ratios: k3 ~ d^2 / 2 is tiny; exact zeros when the log-probs agree.
    lp, ref = _log_probs(gen, 3, 8)
    lp = torch.cat([ref[:1], ref[1:] + 1e-3 * gen.randn(2, 8)])
    out.append(_case(gen, lp, ref, "k3", ("random", "k3"), "log-ratios of 0 (row 0) and about 1e-3 (rows 1-2)"))
    # Large log-ratio differences, float32.
    for kind in KINDS:
        lp, ref = _large_gaps(gen, 4, gen.randint(4, 10))
        out.append(
            _case(gen, lp, ref, kind, ("large",), f"log-probs down to -200 (|log-ratio| up to 200), kind={kind!r}")
        )
    # Tiny log-ratios in float32 (|r| from 3e-5 to 1e-4, both signs): exp(r) - r - 1 rounds to
    # noise there; expm1(r) - r keeps a few digits. Compared with a relative tolerance only.
    lp, ref = _log_probs(gen, 3, 8)
    sign = torch.where(gen.uniform(3, 8) < 0.5, -1.0, 1.0)
    lp = ref + sign * gen.uniform(3, 8, low=3e-5, high=1e-4)
    out.append(
        _case(gen, lp, ref, "k3", ("tiny",), "log-ratios between 3e-5 and 1e-4 in magnitude, kind='k3' (float32)")
    )
    # Any leading shape.
    for kind, shape in (("k1", (7,)), ("k2", (2, 3, 4)), ("k3", (3, 2, 2, 3)), ("k3", ())):
        lp, ref = _log_probs(gen, *shape)
        out.append(_case(gen, lp, ref, kind, ("any-shape",), f"{len(shape)}-D inputs, kind={kind!r}"))
    # Unknown kinds.
    lp, ref = _log_probs(gen, 3, 5)
    for bad in ("k4", "kl", "K1", "mse", "low_var_kl", ""):
        out.append(_case(gen, lp, ref, bad, ("bad-kind",), f"kind={bad!r}", grad=False))
    # Shape contract.
    lp, ref = _log_probs(gen, 4, 5)
    for bad_ref, what in (
        (ref[:, :1], "[4, 1]"),
        (ref[0], "[5]"),
        (ref.t().contiguous(), "[5, 4]"),
        (ref[:3], "[3, 5]"),
    ):
        for kind in ("k1", "k3"):
            out.append(
                gen.case(
                    lp,
                    bad_ref,
                    kwargs={"kind": kind},
                    tags=("shape",),
                    about=f"mismatched shapes: ref_log_probs {what}, kind={kind!r}",
                )
            )
    # Dtypes, device; in-place edits.
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        for kind in KINDS:
            lp, ref = _log_probs(gen, 3, 7, dtype=dtype)
            out.append(_case(gen, lp, ref, kind, ("dtype",), f"{dtype} inputs, kind={kind!r}", grad=False))
    for kind in KINDS:
        lp, ref = _log_probs(gen, 4, 6)
        out.append(
            _case(gen, lp, ref, kind, ("inplace",), f"inputs checked after the call, kind={kind!r}", return_inputs=True)
        )
    return out


@check("k1 = log_probs - ref_log_probs (and k1 is the default kind)", 12, core=True)
def values_k1(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("random", "k1"), what="k1")


@check("k2 = 0.5 * (log_probs - ref_log_probs)^2", 12, core=True)
def values_k2(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("random", "k2"), what="k2")


@check("k3 = exp(ref - log_probs) - (ref - log_probs) - 1", 14, core=True)
def values_k3(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("random", "k3"), what="k3")


@check("large and tiny log-ratios (log-probs down to -200; |r| below 1e-4 for k3, float32): finite and exact", 14)
def large_gaps(ctx: CheckContext) -> None:
    for case in ctx.cases("large"):
        got = require_tensor(ctx.got(case), case, (), "the estimate")
        want = ctx.want(case).output
        if got.shape == want.shape and bool(torch.isfinite(want).all()) and not bool(torch.isfinite(got).all()):
            bad = (~torch.isfinite(got)).nonzero()[0].tolist()
            raise CheckFailed(
                f"Got a non-finite value {where(case)} at {bad}: {float(got[tuple(bad)])} where {float(want[tuple(bad)]):.6g} "
                "was expected. exp(-200) underflows to 0 in float32: compute from the log-ratio "
                "(log_probs - ref_log_probs), never from probabilities exp(log_probs)."
            )
    expect_values(ctx, ctx.cases("large"), what="the estimate")
    expect_grads(ctx, ctx.cases("large"), name="log_probs")
    # k3 ~ r^2 / 2 for tiny r: only a relative tolerance sees whether it survived rounding.
    for case in ctx.cases("tiny"):
        got = require_tensor(ctx.got(case), case, (), "the estimate")
        want = ctx.want(case).output
        if explain_mismatch(got, want, 3e-2, 0.0) is not None:
            raise CheckFailed(
                f"Wrong k3 for tiny log-ratios {where(case)}: {explain_mismatch(got, want, 3e-2, 0.0)}. "
                "exp(r) - r - 1 loses every digit in float32 when |r| < 1e-4; compute torch.expm1(r) - r."
            )


@check("gradient with respect to log_probs", 10)
def gradient(ctx: CheckContext) -> None:
    expect_grads(ctx, ctx.cases("random"), name="log_probs")


@check("any leading shape (0-D, 1-D, 3-D, 4-D inputs), elementwise", 6)
def any_shape(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("any-shape"), what="the estimate")
    expect_grads(ctx, ctx.cases("any-shape"), name="log_probs")


@check("ValueError for an unknown kind", 10, gated=True)
def bad_kind(ctx: CheckContext) -> None:
    only = "Only 'k1', 'k2' and 'k3' are accepted (exactly, case-sensitive); do not fall back silently to one of them."
    expect_value_error(
        ctx,
        ctx.cases("bad-kind"),
        returned="Expected ValueError for an unknown kind {where}, but the call returned normally. " + only,
        raised="Expected ValueError for an unknown kind {where}, but got {error}. " + only,
    )


@check("ValueError on mismatched shapes (no broadcasting)", 8, gated=True)
def shape_errors(ctx: CheckContext) -> None:
    expect_value_error(ctx, ctx.cases("shape"))


@check("result in the inputs' dtype (float32, float64, bfloat16) and device, shaped like the inputs", 8, gated=True)
def dtype_device(ctx: CheckContext) -> None:
    expect_dtype_device(ctx, ctx.cases("dtype"), what="the estimate")


@check("inputs not modified in place", 6, gated=True, self_reported="in-place edits")
def no_inplace(ctx: CheckContext) -> None:
    for case in ctx.cases("inplace"):
        require_no_error(ctx.got(case), case)
    expect_inputs_unchanged(ctx, ctx.cases("inplace"))
