"""Cases and weighted checks for `whiten`.

Values at padded positions are not graded, so the value checks compare valid positions only
(:func:`expect_valid_values`); everything else uses the shared helpers.
"""

from __future__ import annotations

import torch

from exercises.common import expect_dtype_device, expect_inputs_unchanged, expect_value_error
from exercises.compare import cancellation_atol, explain_mismatch, require_tensor, tolerance, where, wrong
from exercises.framework import Case, CaseGen, CheckContext, CheckFailed, check


def _mask_of(case: Case) -> torch.Tensor | None:
    if "mask" in case.kwargs:
        return case.kwargs["mask"]
    return case.args[1] if len(case.args) > 1 else None


def _slack(case: Case, want: torch.Tensor) -> torch.Tensor:
    """The cancellation slack of a case (:func:`~exercises.compare.cancellation_atol`), from the
    valid inputs' float64 mean and ``sqrt(var + eps)``, the spread the result is divided by."""
    values = case.args[0].to(torch.float64)
    mask = _mask_of(case)
    valid = values[mask != 0] if mask is not None and mask.shape == values.shape else values.reshape(-1)
    mean = valid.mean()
    spread = torch.sqrt(valid.var() + case.kwargs.get("eps", 1e-8))
    spread = torch.where(valid.var() > 0, spread, 0.0)  # every value equal: the exact answer, no slack
    scaled = want.to(torch.float64) - (0.0 if case.kwargs.get("shift_mean", True) else mean)
    return cancellation_atol(mean, spread, valid.numel(), scaled, want.dtype)


def expect_valid_values(ctx: CheckContext, cases: list[Case], what: str = "whitened values") -> None:
    """The output matches the reference's at every valid position (padding is not graded), within
    the dtype's tolerance grown by the cancellation factor (docs/contract.md, "Numbers")."""
    for case in cases:
        got = require_tensor(ctx.got(case), case, (), what)
        want = ctx.want(case).output
        assert isinstance(want, torch.Tensor), f"reference returned no tensor for case {case.id}"
        mask = _mask_of(case)
        if mask is not None and got.shape == want.shape:
            got = torch.where(mask != 0, got.detach().to(torch.float64), want.to(torch.float64))
        rtol, atol = tolerance(want.dtype)
        message = explain_mismatch(got, want, rtol, atol + _slack(case, want))
        if message is not None:
            raise CheckFailed(f"{wrong(what)} {where(case)}: {message} (padded positions are not graded).")


def _padded(
    gen: CaseGen,
    b: int,
    t: int,
    *,
    offset: float = 0.5,
    scale: float = 2.0,
    garbage: float = 20.0,
    min_len: int = 1,
    bool_mask: bool = False,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    """[B, T] values with real padding; padded positions hold large non-zero garbage."""
    lengths = [gen.randint(min_len, t + 1) for _ in range(b)]
    lengths[gen.randint(0, b)] = gen.randint(min_len, t)
    mask = gen.right_padded_mask(b, t, lengths=lengths, dtype=torch.float64)
    values = offset + gen.randn(b, t, dtype=torch.float64, scale=scale)
    values = torch.where(mask == 0, garbage + gen.randn(b, t, dtype=torch.float64, scale=5.0), values)
    return values.to(dtype), (mask.bool() if bool_mask else mask.to(dtype))


def cases(gen: CaseGen) -> list[Case]:
    """Every input the checks read, built from the run's seed."""
    out: list[Case] = []
    for i, bool_mask in enumerate((False, True, False)):
        v, m = _padded(gen, gen.randint(3, 7), gen.randint(5, 17), min_len=2, bool_mask=bool_mask)
        out.append(gen.case(v, m, tags=("random",), about=f"random case {i + 1}{', bool mask' if bool_mask else ''}"))
    for i in range(2):
        v, m = _padded(gen, gen.randint(3, 7), gen.randint(5, 17), offset=3.0, min_len=2)
        out.append(
            gen.case(v, m, kwargs={"shift_mean": False}, tags=("noshift",), about=f"shift_mean=False, case {i + 1}")
        )
    # Few valid values: Bessel's correction n / (n - 1) is large.
    for n_valid in (2, 3):
        v, _ = _padded(gen, 3, 4, dtype=torch.float64)
        m = torch.zeros(3, 4, dtype=torch.float64)
        m[0, :n_valid] = 1.0
        out.append(
            gen.case(
                v,
                m,
                kwargs={"shift_mean": n_valid == 3},
                tags=("few",),
                about=f"{n_valid} valid values in the whole batch",
            )
        )
    # Any shape, no mask; and a 3-D input with a mask.
    for shape in ((11,), (2, 3, 4)):
        out.append(gen.case(1.0 + gen.randn(*shape, scale=1.5), tags=("anyshape",), about=f"{len(shape)}-D, mask=None"))
    v = gen.randn(2, 3, 5)
    m = (torch.arange(5) < torch.tensor([[5, 2, 0], [1, 4, 3]]).unsqueeze(-1)).float()
    out.append(
        gen.case(
            v + 30.0 * (1 - m),
            m,
            kwargs={"shift_mean": False},
            tags=("anyshape",),
            about="3-D with a mask, shift_mean=False",
        )
    )
    # Near-constant and constant values (variance well above, well below, and equal to 0 vs eps).
    v, m = _padded(gen, 4, 8, dtype=torch.float64)
    out.append(
        gen.case(
            1000.0 + 1e-3 * torch.randn(4, 8, generator=gen.generator, dtype=torch.float64) + 50.0 * (1 - m),
            m,
            tags=("constant",),
            about="values 1000 +- 1e-3 (float64)",
        )
    )
    v, m = _padded(gen, 4, 8, dtype=torch.float64)
    out.append(
        gen.case(
            5.0 + 1e-7 * torch.randn(4, 8, generator=gen.generator, dtype=torch.float64) + 50.0 * (1 - m),
            m,
            kwargs={"shift_mean": False},
            tags=("constant",),
            about="values 5 +- 1e-7 (float64), shift_mean=False",
        )
    )
    for shift in (True, False):
        v, m = _padded(gen, 3, 6, min_len=2)
        out.append(
            gen.case(
                torch.where(m != 0, torch.full_like(v, 3.0), v),
                m,
                kwargs={"shift_mean": shift},
                tags=("constant",),
                about=f"every valid value 3.0 (float32), shift_mean={shift}",
            )
        )
    # Non-default eps.
    v, m = _padded(gen, 4, 9, min_len=2)
    out.append(gen.case(v, m, kwargs={"eps": 0.5}, tags=("eps",), about="eps=0.5"))
    v, m = _padded(gen, 4, 9, offset=0.0, scale=0.03, min_len=2, dtype=torch.float64)
    out.append(
        gen.case(
            v,
            m,
            kwargs={"eps": 1e-3, "shift_mean": False},
            tags=("eps",),
            about="eps=1e-3 with values of spread 0.03 (float64), shift_mean=False",
        )
    )
    # Fewer than two valid values.
    v, _ = _padded(gen, 3, 5)
    for about, m in (
        ("no valid value", torch.zeros(3, 5)),
        ("one valid value", torch.zeros(3, 5).index_put_((torch.tensor([1]), torch.tensor([0])), torch.tensor(1.0))),
        (
            "one valid value, bool mask",
            torch.zeros(3, 5, dtype=torch.bool).index_put_((torch.tensor([2]), torch.tensor([0])), torch.tensor(True)),
        ),
    ):
        out.append(gen.case(v, m, tags=("too-few",), about=about))
    out.append(gen.case(gen.randn(1), tags=("too-few",), about="a single value, mask=None"))
    # Shape contract.
    v, m = _padded(gen, 3, 6)
    for bad, about in ((m[:, :-1], "mask [B, T-1]"), (m[:, 0], "mask [B]"), (m.t().contiguous(), "mask transposed")):
        out.append(gen.case(v, bad, tags=("shape",), about=about))
    # Dtypes and device.
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        v, m = _padded(gen, 3, 8, min_len=2, dtype=dtype)
        out.append(gen.case(v, m, tags=("dtype",), about=f"{dtype} inputs"))
    # In-place edits.
    v, m = _padded(gen, 4, 7, min_len=2)
    out.append(
        gen.case(
            v,
            m,
            kwargs={"shift_mean": False},
            tags=("inplace",),
            return_inputs=True,
            about="inputs checked after the call",
        )
    )
    # Seven valid float32 0.1s: their float32 mean is a rounding step off 0.1, and that step times
    # rsqrt(0 + eps) is -7.45e-05, not 0, unless the zero spread is detected (docs/contract.md §7).
    # Built last (issue 37), so the cases before it keep their ids and draws.
    m = gen.right_padded_mask(2, 5, lengths=[4, 3])
    v = torch.where(m != 0, torch.full((2, 5), 0.1), 20.0 + gen.randn(2, 5, scale=5.0))
    out.append(
        gen.case(v, m, tags=("constant", "zero-spread"), about="seven valid values, all 0.1 (float32), shift_mean=True")
    )
    for case in out:
        mask = _mask_of(case)
        if mask is not None and mask.shape == case.args[0].shape:
            case.ungraded = mask == 0
    return out


@check("whitened values on random padded inputs (valid positions)", 20, core=True)
def values_random(ctx: CheckContext) -> None:
    expect_valid_values(ctx, ctx.cases("random"))


@check("shift_mean=False adds the mean back", 12)
def values_no_shift(ctx: CheckContext) -> None:
    expect_valid_values(ctx, ctx.cases("noshift"))


@check("unbiased variance (Bessel's correction) with few valid values", 10)
def unbiased(ctx: CheckContext) -> None:
    expect_valid_values(ctx, ctx.cases("few"))


@check("any shape (1-D and 3-D, with and without a mask)", 8)
def any_shape(ctx: CheckContext) -> None:
    expect_valid_values(ctx, ctx.cases("anyshape"))


@check(
    "near-constant and constant values: finite and exact",
    12,
    announce=(
        "near-constant and constant values: finite and exact",
        "the tolerance grows by their cancellation factor",
        "exactly 0 for seven valid 0.1s (float32): detect a zero spread",
    ),
)
def near_constant(ctx: CheckContext) -> None:
    for case in ctx.cases("constant"):
        got = require_tensor(ctx.got(case), case, (), "whitened values")
        mask = _mask_of(case)
        if got.shape == case.args[0].shape and not torch.isfinite(got[mask != 0].to(torch.float64)).all():
            raise CheckFailed(
                f"Non-finite whitened values {where(case)}: the variance is (almost) 0 there, and eps belongs "
                "inside the square root, rsqrt(var + eps), so the result stays finite."
            )
        if "zero-spread" in case.tags and got.shape == case.args[0].shape:
            valid = got[mask != 0]
            if bool((valid != 0).any()):
                worst = float(valid.abs().to(torch.float64).max())
                raise CheckFailed(
                    f"Expected exactly 0 at every valid position {where(case)}: every valid value is the same, "
                    f"but got values up to {worst:.3g} in magnitude. The float32 mean of equal values can be a "
                    "rounding step off them, and that step times rsqrt(var + eps) is not 0: detect a zero spread "
                    "(max == min over the valid values) and return 0 there."
                )
        expect_valid_values(ctx, [case])


@check("non-default eps, inside the square root", 6)
def custom_eps(ctx: CheckContext) -> None:
    expect_valid_values(ctx, ctx.cases("eps"))


@check("ValueError for fewer than two valid values", 10, gated=True)
def too_few(ctx: CheckContext) -> None:
    expect_value_error(
        ctx,
        ctx.cases("too-few"),
        returned=(
            "Expected ValueError {where}: fewer than two valid values leave the unbiased variance undefined "
            "(it divides by n - 1), but the call returned normally."
        ),
        raised="Expected ValueError {where} (fewer than two valid values), got {error}",
    )


@check("ValueError on a mask of another shape (no broadcasting)", 8, gated=True)
def shape_errors(ctx: CheckContext) -> None:
    expect_value_error(ctx, ctx.cases("shape"))


@check("result in the input's dtype (float32, float64, bfloat16) and device", 8, gated=True)
def dtype_device(ctx: CheckContext) -> None:
    for case in ctx.cases("dtype"):
        expect_dtype_device(ctx, [case], what="whitened values", values=False)
        expect_valid_values(ctx, [case])


@check("inputs not modified in place", 6, gated=True, self_reported="in-place edits")
def no_inplace(ctx: CheckContext) -> None:
    expect_inputs_unchanged(ctx, ctx.cases("inplace"))
