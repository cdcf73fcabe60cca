"""Cases and weighted checks for `token-rewards`."""

from __future__ import annotations

from typing import Any

import torch

from exercises.common import (
    expect_detached,
    expect_dtype_device,
    expect_inputs_unchanged,
    expect_value_error,
    expect_values,
)
from exercises.compare import require_tensor, where
from exercises.framework import Case, CaseGen, CheckContext, CheckFailed, check


def _mask(gen: CaseGen, b: int, t: int, lengths: list[int] | None = None) -> torch.Tensor:
    """Right-padded mask whose rows really differ in length (some rows end well before T)."""
    if lengths is None:
        lengths = [gen.randint(1, t + 1) for _ in range(b)]
        lengths[gen.randint(0, b)] = t
        lengths[gen.randint(0, b)] = max(1, t // 3)
    return gen.right_padded_mask(b, t, lengths=lengths)


def _inputs(
    gen: CaseGen, mask: torch.Tensor, dtype: torch.dtype = torch.float32, same: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Scores, old and reference log-probs (equal on valid tokens when ``same``), with non-zero
    garbage at every padded position of the log-probs."""
    b, t = mask.shape
    scores = gen.randn(b, dtype=torch.float64, scale=2.0) + 0.5
    ref = gen.randn(b, t, dtype=torch.float64, scale=0.5) - 2.0
    old = ref.clone() if same else ref + gen.randn(b, t, dtype=torch.float64, scale=0.5)
    valid = mask != 0
    out = []
    for x in (old, ref):
        junk = 4 * (1 + gen.uniform(b, t, dtype=torch.float64)) * torch.sign(gen.randn(b, t, dtype=torch.float64))
        out.append(torch.where(valid, x, junk).to(dtype))
    return scores.to(dtype), out[0], out[1]


def _case(
    gen: CaseGen,
    mask: torch.Tensor | None,
    tags: tuple[str, ...],
    about: str,
    kl_coef: float | None = None,
    dtype: torch.dtype = torch.float32,
    same: bool = False,
    shape: tuple[int, int] | None = None,
    **fields: Any,
) -> Case:
    if mask is not None:
        b, t = mask.shape
    else:
        assert shape is not None, "a case without a mask needs its shape"
        b, t = shape
    scores, old, ref = _inputs(gen, mask if mask is not None else torch.ones(b, t), dtype, same)
    kwargs: dict[str, Any] = {}
    if mask is not None:
        kwargs["mask"] = mask
    if kl_coef is not None:
        kwargs["kl_coef"] = kl_coef
    return gen.case(scores, old, ref, kwargs=kwargs, tags=tags, about=about, **fields)


def cases(gen: CaseGen) -> list[Case]:
    """Every input the checks read, built from the run's seed."""
    out: list[Case] = []
    for i in range(3):
        b, t = gen.randint(3, 7), gen.randint(5, 17)
        out.append(_case(gen, _mask(gen, b, t), ("random", "masked"), f"random padded batch {i + 1}, default kl_coef"))
    for coef in (0.5, 0.03):
        b, t = gen.randint(3, 7), gen.randint(5, 17)
        out.append(_case(gen, _mask(gen, b, t), ("custom-coef", "masked"), f"kl_coef={coef}", kl_coef=coef))
    # KL exactly 0 on valid tokens: only the scores show, so their placement is isolated.
    for i in range(2):
        b, t = gen.randint(4, 7), gen.randint(5, 12)
        out.append(
            _case(
                gen,
                _mask(gen, b, t),
                ("placement", "masked"),
                f"log_probs_old == ref_log_probs on valid tokens (rewards are the scores alone) {i + 1}",
                same=True,
            )
        )
    b, t = gen.randint(3, 6), gen.randint(4, 12)
    out.append(
        _case(gen, None, ("mask-kinds",), "mask=None (every position valid, score at T - 1)", shape=(b, t), kl_coef=0.2)
    )
    out.append(_case(gen, _mask(gen, b, t).bool(), ("mask-kinds", "masked"), "bool mask"))
    # Edge rows: length-1 rows; a row with no valid token; a batch with no valid token at all.
    t = gen.randint(4, 9)
    out.append(_case(gen, _mask(gen, 4, t, lengths=[1, 1, t, 2]), ("edge", "masked"), "length-1 rows"))
    out.append(
        _case(gen, _mask(gen, 4, t, lengths=[t, 0, 2, 0]), ("edge", "masked"), "rows 1 and 3 have no valid token")
    )
    out.append(_case(gen, _mask(gen, 3, t, lengths=[0, 0, 0]), ("edge", "masked"), "no valid token in the whole batch"))
    # Detached output although every input requires grad.
    for i in range(2):
        b, t = gen.randint(3, 6), gen.randint(4, 12)
        out.append(
            _case(
                gen,
                _mask(gen, b, t),
                ("detached",),
                f"every input requires grad {i + 1}",
                grad=("0", "1", "2"),
                kl_coef=0.1 + 0.1 * i,
                probes=((),),
            )
        )
    # Shape contract.
    mask = _mask(gen, 4, 5)
    scores, old, ref = _inputs(gen, mask)
    for bad, kw, what in (
        ((scores[:, None], old, ref), {"mask": mask}, "scores [4, 1]"),
        ((scores[:3], old, ref), {"mask": mask}, "scores [3] for B = 4"),
        ((old, old, ref), {"mask": mask}, "scores [4, 5]"),
        ((scores, old, ref[:, :4]), {"mask": mask}, "ref_log_probs [4, 4]"),
        ((scores, old, ref[:1]), {"mask": mask}, "ref_log_probs [1, 5]"),
        ((scores, old, ref), {"mask": mask[:, :1]}, "mask [4, 1]"),
        ((scores, old, ref), {"mask": mask[0]}, "mask [5]"),
    ):
        out.append(gen.case(*bad, kwargs=kw, tags=("shape",), about=f"mismatched shapes: {what}"))
    # Dtypes, device; in-place edits.
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        mask = _mask(gen, 3, 7).to(dtype)
        out.append(_case(gen, mask, ("dtype",), f"{dtype} inputs", dtype=dtype, kl_coef=0.2))
    out.append(_case(gen, _mask(gen, 5, 9), ("inplace",), "inputs checked after the call", return_inputs=True))
    return out


@check("rewards on random padded batches (default kl_coef=0.1)", 18, core=True)
def values_default(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("random"), what="rewards")


@check("non-default kl_coef", 12)
def values_custom_coef(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("custom-coef"), what="rewards")


@check("score added at the last VALID token of each row (not at position T - 1)", 14)
def score_placement(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("placement"), what="rewards")


@check("padded positions are exactly 0", 10, gated=True, reads=("zero-pattern",))
def padding_zero(ctx: CheckContext) -> None:
    for case in ctx.cases("masked"):
        got = require_tensor(ctx.got(case), case, (), "rewards")
        mask = case.kwargs["mask"]
        if got.shape != mask.shape:
            raise CheckFailed(f"Expected rewards of shape {list(mask.shape)}, got {list(got.shape)} {where(case)}.")
        leaked = (mask == 0) & (got.detach().to(torch.float64) != 0)
        if bool(leaked.any()):
            b, t = (int(i) for i in leaked.nonzero()[0])
            raise CheckFailed(
                f"{int(leaked.sum())} padded positions are not 0 {where(case)}; first at [{b}, {t}]: got "
                f"{float(got[b, t]):.6g}. Padded positions of the log-probs hold garbage: select the KL term with "
                "the mask, and put each score at the row's last VALID token, not past it."
            )


@check("mask=None (every position valid) and bool masks", 8)
def mask_kinds(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("mask-kinds"), what="rewards")


@check("edge rows: length-1 rows, and rows with no valid token (all 0, no score)", 10)
def edge_rows(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("edge"), what="rewards")


@check(
    "rewards are detached (never require grad, even when the inputs do)",
    10,
    gated=True,
    reads=("probes",),
    self_reported="detachment",
)
def detached(ctx: CheckContext) -> None:
    expect_detached(ctx, ctx.cases("detached"), [()], ["the rewards"])


@check("ValueError on mismatched shapes (scores must be [B]; no broadcasting)", 8, gated=True)
def shape_errors(ctx: CheckContext) -> None:
    expect_value_error(ctx, ctx.cases("shape"))


@check("result in the inputs' dtype (float32, float64, bfloat16) and device", 6, gated=True)
def dtype_device(ctx: CheckContext) -> None:
    expect_dtype_device(ctx, ctx.cases("dtype"), what="rewards")


@check("inputs not modified in place", 4, gated=True, self_reported="in-place edits")
def no_inplace(ctx: CheckContext) -> None:
    expect_inputs_unchanged(ctx, ctx.cases("inplace"))
