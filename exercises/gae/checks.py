"""Cases and weighted checks for `gae`."""

from __future__ import annotations

import torch

from exercises.common import (
    expect_detached,
    expect_dtype_device,
    expect_inputs_unchanged,
    expect_memory_within_budget,
    expect_value_error,
    expect_values,
)
from exercises.compare import require_tensor, where
from exercises.framework import Case, CaseGen, CheckContext, CheckFailed, check
from exercises.gae.spec import SPEC

ADV, RET = (0,), (1,)
#: (gamma, lam) pairs other than the defaults, including lam = 1 (Monte Carlo) and lam = 0 (TD).
HYPER = ((0.99, 0.95), (0.9, 0.8), (0.8, 1.0), (0.7, 0.0))
MEMORY_SHAPE = (4, 3072)


def _lengths(gen: CaseGen, b: int, t: int) -> list[int]:
    """Valid lengths with real padding: at least one row is cut short, one row may be full."""
    lengths = [gen.randint(1, t + 1) for _ in range(b)]
    lengths[gen.randint(0, b)] = gen.randint(1, t)
    return lengths


def _inputs(
    gen: CaseGen,
    b: int,
    t: int,
    lengths: list[int] | None = None,
    dtype: torch.dtype = torch.float32,
    garbage: float = 5.0,
    bool_mask: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Rewards, values and a right-padded mask; padded positions hold large non-zero garbage."""
    mask = gen.right_padded_mask(
        b, t, lengths=lengths if lengths is not None else _lengths(gen, b, t), dtype=torch.float64
    )
    rewards = gen.randn(b, t, dtype=torch.float64)
    values = gen.randn(b, t, dtype=torch.float64)
    pad = mask == 0
    rewards = torch.where(pad, garbage + gen.randn(b, t, dtype=torch.float64), rewards)
    values = torch.where(pad, -garbage + 2 * gen.randn(b, t, dtype=torch.float64), values)
    mask = mask.bool() if bool_mask else mask.to(dtype)
    return rewards.to(dtype), values.to(dtype), mask


def _hyper(gamma: float, lam: float) -> dict[str, float]:
    return {"gamma": gamma, "lam": lam}


def cases(gen: CaseGen) -> list[Case]:
    """Every input the checks read, built from the run's seed."""
    out: list[Case] = []
    # Defaults (gamma=1, lam=0.95): twice through the defaults themselves, once explicit, one bool mask.
    for i, (explicit, bool_mask) in enumerate(((False, False), (False, True), (True, False))):
        b, t = gen.randint(3, 7), gen.randint(5, 21)
        r, v, m = _inputs(gen, b, t, bool_mask=bool_mask)
        out.append(
            gen.case(
                r,
                v,
                m,
                kwargs=_hyper(1.0, 0.95) if explicit else {},
                tags=("random", "default", "padded"),
                about=f"random case {i + 1}{', bool mask' if bool_mask else ''}",
            )
        )
    for gamma, lam in HYPER:
        b, t = gen.randint(3, 7), gen.randint(5, 21)
        r, v, m = _inputs(gen, b, t)
        out.append(
            gen.case(
                r,
                v,
                m,
                kwargs=_hyper(gamma, lam),
                tags=("random", "hyper", "padded"),
                about=f"gamma={gamma:g}, lam={lam:g}",
            )
        )
    # Every row padded, with values at padding far from 0: bootstrapping from them shows.
    for gamma, lam in ((1.0, 0.95), (0.9, 0.9)):
        b, t = 4, gen.randint(6, 13)
        r, v, m = _inputs(gen, b, t, lengths=[gen.randint(1, t) for _ in range(b)], garbage=50.0)
        out.append(
            gen.case(
                r,
                v,
                m,
                kwargs=_hyper(gamma, lam),
                tags=("bootstrap", "padded"),
                about=f"every row padded, values 50 at padding, gamma={gamma:g}, lam={lam:g}",
            )
        )
    # Edge cases: length-1 rows and a row with no valid token.
    t = gen.randint(4, 9)
    r, v, m = _inputs(gen, 5, t, lengths=[1, t, 0, 1, gen.randint(2, t)])
    out.append(
        gen.case(
            r, v, m, kwargs=_hyper(0.95, 0.9), tags=("edge", "padded"), about="rows of length 1, t, 0, 1 and in between"
        )
    )
    r, v, m = _inputs(gen, 1, 1, lengths=[1])
    out.append(gen.case(r, v, m, tags=("edge",), about="a single token"))
    r, v, m = _inputs(gen, 2, 5, lengths=[0, 0])
    out.append(gen.case(r, v, m, tags=("edge", "padded"), about="no valid token at all"))
    # mask=None: every position valid.
    for gamma, lam in ((1.0, 0.95), (0.95, 0.9)):
        b, t = gen.randint(2, 5), gen.randint(3, 12)
        out.append(
            gen.case(
                gen.randn(b, t),
                gen.randn(b, t),
                None,
                kwargs=_hyper(gamma, lam),
                tags=("nomask",),
                about=f"mask=None, gamma={gamma:g}, lam={lam:g}",
            )
        )
    # values requires grad: both outputs must come back detached.
    r, v, m = _inputs(gen, 3, 7)
    out.append(
        gen.case(
            r,
            v,
            m,
            kwargs=_hyper(0.9, 0.95),
            tags=("detach",),
            grad=("1",),
            probes=(ADV, RET),
            about="values requires grad",
        )
    )
    # Not read by a check: a backward pass from the advantages (the reference's raises, as
    # nothing requires grad) tells "advantages attached" from "only returns attached".
    r, v, m = _inputs(gen, 3, 7)
    out.append(
        gen.case(
            r,
            v,
            m,
            tags=("detach-probe",),
            grad=("1",),
            backward=[0],
            weights=gen.randn(3, 7),
            about="backward from the advantages",
        )
    )
    # Shape contract.
    b, t = 3, 6
    r, v, m = _inputs(gen, b, t)
    v_long = torch.cat([v, gen.randn(b, 1)], dim=1)
    for bad, about in (
        ((r, v_long, m), "values [B, T+1] (a bootstrap value appended)"),
        ((r, v, m[:, :-1]), "mask [B, T-1]"),
        ((r, v[:, 0], m), "values [B]"),
        ((r, v.t().contiguous(), m.t().contiguous()), "values and mask transposed"),
    ):
        out.append(gen.case(*bad, tags=("shape",), about=about))
    # Dtypes and device.
    # Inputs on a 1/8 grid and lam = 0.5 keep bfloat16 arithmetic (8 significant bits) nearly
    # exact, so a solution that loops in bfloat16 agrees with the float32 reference.
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        r, v, m = _inputs(gen, 3, 6)
        r, v = (torch.round(x.clamp(-8, 8) * 8) / 8 for x in (r, v))
        out.append(
            gen.case(
                r.to(dtype), v.to(dtype), m.to(dtype), kwargs=_hyper(1.0, 0.5), tags=("dtype",), about=f"{dtype} inputs"
            )
        )
    # In-place edits.
    r, v, m = _inputs(gen, 4, 9)
    out.append(
        gen.case(
            r,
            v,
            m,
            kwargs=_hyper(0.9, 0.95),
            tags=("inplace",),
            return_inputs=True,
            about="inputs checked after the call",
        )
    )
    # Memory: a long response, after a small warm-up call.
    wr, wv, wm = _inputs(gen, 2, 3)
    warm = gen.case(wr, wv, wm, about="warm-up")
    b, t = MEMORY_SHAPE
    r, v, m = _inputs(gen, b, t, lengths=[t, t - 1, t // 2, t - gen.randint(1, 100)])
    out.append(
        gen.case(
            r,
            v,
            m,
            kwargs=_hyper(0.99, 0.95),
            tags=("memory",),
            memory=True,
            warmup=warm,
            about=f"a long response, B={b}, T={t}",
        )
    )
    # The dtype on the mask=None path too (bfloat16, the 1/8 grid as above). Built last, so the
    # cases before it keep their ids and draws.
    r, v, _ = _inputs(gen, 3, 6)
    r, v = (torch.round(x.clamp(-8, 8) * 8) / 8 for x in (r, v))
    out.append(
        gen.case(
            r.to(torch.bfloat16),
            v.to(torch.bfloat16),
            None,
            kwargs=_hyper(1.0, 0.5),
            tags=("dtype",),
            about="torch.bfloat16 inputs, mask=None",
        )
    )
    # rewards requires grad (values does not): the outputs stay detached whichever input requires
    # grad (docs/contract.md §3). Built last, like the case above (issue 37).
    r, v, m = _inputs(gen, 3, 7)
    out.append(
        gen.case(
            r,
            v,
            m,
            kwargs=_hyper(0.9, 0.95),
            tags=("detach",),
            grad=("0",),
            probes=(ADV, RET),
            about="rewards requires grad (values does not)",
        )
    )
    return out


@check("advantages on random padded inputs (default gamma=1, lam=0.95)", 14, core=True)
def advantages_default(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("random", "default"), ADV, what="advantages")


@check("returns = advantages + values on random padded inputs", 10, core=True)
def returns_default(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("random", "default"), RET, what="returns")


@check("advantages and returns with non-default gamma and lam", 12)
def hyper(ctx: CheckContext) -> None:
    for case in ctx.cases("random", "hyper"):
        expect_values(ctx, [case], ADV, what="advantages")
        expect_values(ctx, [case], RET, what="returns")


@check("V_{t+1} is 0 after the last valid token (no bootstrapping from padding)", 10)
def no_bootstrap_from_padding(ctx: CheckContext) -> None:
    for case in ctx.cases("bootstrap"):
        expect_values(ctx, [case], ADV, what="advantages")
        expect_values(ctx, [case], RET, what="returns")


@check("advantage 0 and return 0 at padded positions", 8, gated=True, reads=("zero-pattern",))
def zero_at_padding(ctx: CheckContext) -> None:
    for case in ctx.cases("padded"):
        mask = case.args[2]
        pad = mask == 0
        for path, name in ((ADV, "advantages"), (RET, "returns")):
            got = require_tensor(ctx.got(case), case, path, name)
            if got.shape != mask.shape:
                raise CheckFailed(f"Expected {name} of shape {list(mask.shape)}, got {list(got.shape)} {where(case)}.")
            leaked = pad & ~(got.to(torch.float64) == 0)
            if leaked.any():
                first = [int(i) for i in leaked.nonzero()[0]]
                raise CheckFailed(
                    f"Expected {name} 0 at every padded position (mask 0) {where(case)}, but {int(leaked.sum())} of "
                    f"{int(pad.sum())} padded positions are not; first at {first}: got {float(got[tuple(first)]):.6g}. "
                    "Zero both outputs where the mask is 0 (returns too: advantages + values is garbage there)."
                )


@check("length-1 rows and a row with no valid token", 10)
def edge_rows(ctx: CheckContext) -> None:
    for case in ctx.cases("edge"):
        expect_values(ctx, [case], ADV, what="advantages")
        expect_values(ctx, [case], RET, what="returns")


@check("mask=None: every position valid", 6)
def no_mask(ctx: CheckContext) -> None:
    for case in ctx.cases("nomask"):
        expect_values(ctx, [case], ADV, what="advantages")
        expect_values(ctx, [case], RET, what="returns")


@check(
    "both outputs detached even when values requires grad",
    8,
    gated=True,
    reads=("probes",),
    self_reported="detachment",
    announce=(
        "both outputs detached even when values requires grad",
        "and when rewards requires grad",
    ),
)
def detached(ctx: CheckContext) -> None:
    expect_detached(ctx, ctx.cases("detach"), [ADV, RET], ["advantages", "returns"])


@check("ValueError on mismatched shapes (no broadcasting)", 6, gated=True)
def shape_errors(ctx: CheckContext) -> None:
    expect_value_error(ctx, ctx.cases("shape"))


@check(
    "outputs in the inputs' dtype (float32, float64, bfloat16) and device",
    6,
    gated=True,
    announce=(
        "outputs in the inputs' dtype (float32, float64, bfloat16) and device",
        "bfloat16 inputs with mask=None come back in bfloat16 too",
    ),
)
def dtype_device(ctx: CheckContext) -> None:
    for case in ctx.cases("dtype"):
        expect_dtype_device(ctx, [case], ADV, what="advantages")
        expect_dtype_device(ctx, [case], RET, what="returns")


@check("inputs not modified in place", 4, gated=True, self_reported="in-place edits")
def no_inplace(ctx: CheckContext) -> None:
    expect_inputs_unchanged(ctx, ctx.cases("inplace"))


@check(f"peak memory on a {MEMORY_SHAPE[0]} x {MEMORY_SHAPE[1]} input within {SPEC.memory_budget}", 6, memory=True)
def memory(ctx: CheckContext) -> None:
    for case in ctx.cases("memory"):
        expect_memory_within_budget(
            ctx,
            case,
            SPEC.memory_budget,
            fix=(
                "Memory must stay linear in T: run the recursion backwards over t with O(B) state; never build a "
                "[T, T] discount matrix."
            ),
        )
