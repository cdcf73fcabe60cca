"""Check bodies that every exercise's contract shares (docs/contract.md, "Arguments and results").

Values against the reference, gradients, ValueError on mismatched shapes, no in-place edits,
the inputs' dtype and device, and peak memory within a budget of the reference's. An
exercise's ``checks.py`` calls these with its own cases; each raises ``CheckFailed`` with a
message that says what was expected, what came back, and on which input.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from exercises.compare import (
    assert_close,
    assert_output_close,
    pick,
    require_no_error,
    require_tensor,
    shown_device,
    summarize,
    where,
)
from exercises.framework import Case, CheckContext, CheckFailed, MemoryBudget

MiB = 1 << 20


def expect_values(
    ctx: CheckContext,
    cases: list[Case],
    path: tuple[int | str, ...] = (),
    what: str = "the result",
    rtol: float | None = None,
    atol: float | None = None,
    hidden: bool = False,
) -> None:
    """Every case's output (at ``path``) matches the reference's."""
    for case in cases:
        assert_output_close(ctx, case, path, what, rtol, atol, hidden)


def expect_grads(
    ctx: CheckContext,
    cases: list[Case],
    arg: str = "0",
    name: str = "the first argument",
    rtol: float | None = None,
    atol: float | None = None,
    hidden: bool = False,
) -> None:
    """The gradient reaching argument ``arg`` matches the reference's (and exists)."""
    for case in cases:
        got = ctx.got(case)
        require_no_error(got, case, hidden)
        want = ctx.want(case).grads.get(arg)
        have = got.grads.get(arg)
        if have is None:
            raise CheckFailed(
                f"No gradient reached {name} {where(case, hidden)}: the result must stay connected to the "
                "autograd graph (no .detach(), .item(), .data, torch.no_grad() or numpy round-trips)."
            )
        assert want is not None
        assert_close(have, want, case, f"gradient with respect to {name}", rtol, atol, hidden)


def expect_detached(ctx: CheckContext, cases: list[Case], paths: list[tuple[int | str, ...]], names: list[str]) -> None:
    """No gradient flows from the outputs at ``paths`` to any input, even though inputs require grad.

    The case probes each path (``Case.probes``): the harness reads whether the output (an exact
    ``torch.Tensor``) is on a graph at all, back-propagates from it with the autograd engine and
    sends back what reached the inputs. A detached output is on no graph and reaches nothing (a
    hook that zeroes the inputs' gradients does not make an attached output detached); a probe
    that never answered is a failure, not a pass.
    """
    for case in cases:
        got = ctx.got(case)
        require_no_error(got, case)
        for path, name in zip(paths, names):
            require_tensor(got, case, path, name)
            index = case.probes.index(tuple(path))
            if got.probes is None or index >= len(got.probes):
                raise CheckFailed(f"No answer came back on whether {name} is detached {where(case)}.")
            probe = got.probes[index]
            reached = [key for key, grad in probe["grads"].items() if grad is not None and bool(torch.any(grad != 0))]
            if probe["requires_grad"] or reached:
                raise CheckFailed(
                    f"Gradient flows from {name} back to your inputs {where(case)}: it must be detached "
                    "(the contract says no gradient flows through it; use .detach() or compute it under "
                    "torch.no_grad())."
                )


#: What :func:`expect_value_error` says by default: the contract's shape errors.
SHAPES_RETURNED = (
    "Expected ValueError for mismatched shapes {where}, but the call returned normally "
    "(broadcasting is not accepted: shapes must be equal)."
)
SHAPES_RAISED = "Expected ValueError for mismatched shapes {where}, got {error}"


def expect_value_error(
    ctx: CheckContext,
    cases: list[Case],
    *,
    returned: str = SHAPES_RETURNED,
    raised: str = SHAPES_RAISED,
    describe: Callable[[Any], str] = repr,
) -> None:
    """Each case must raise ValueError (or a subclass): by default, for mismatched shapes.

    ``returned`` is the message when the call returned normally, ``raised`` when it raised
    something else: templates with ``{where}`` (the case), ``{about}`` (its description),
    ``{error}`` ("Type: message" of what was raised) and, in ``returned``, ``{value}`` (what
    came back, through ``describe``). What came back is read only when ``{value}`` is asked
    for, so the check's evidence is the exception alone otherwise.
    """
    for case in cases:
        got = ctx.got(case)
        if got.missing:
            raise CheckFailed(f"No result came back {where(case)}.")
        if got.error is None:
            value = describe(got.output) if "{value}" in returned else ""
            raise CheckFailed(returned.format(where=where(case), about=case.about, value=value))
        if not got.raised("ValueError"):
            error = f"{got.error.type}: {got.error.message}"
            raise CheckFailed(raised.format(where=where(case), about=case.about, error=error))


def expect_inputs_unchanged(ctx: CheckContext, cases: list[Case]) -> None:
    """No tensor argument was modified in place."""
    for case in cases:
        got = ctx.got(case)
        require_no_error(got, case)
        tensors = [(str(i), a) for i, a in enumerate(case.args)] + list(case.kwargs.items())
        for key, before in tensors:
            if not isinstance(before, torch.Tensor):
                continue
            label = key if key in case.kwargs else f"argument {int(key) + 1}"
            after = got.inputs_after.get(key)
            if after is None:  # never a pass by absence
                raise CheckFailed(
                    f"No copy of {label} came back after the call {where(case)}, so it cannot be shown unchanged."
                )
            same = after.shape == before.shape and torch.equal(after.to(before.dtype), before)
            if not same:
                raise CheckFailed(
                    f"Your function modified {label} in place {where(case)}: callers' tensors must not "
                    "change (avoid in-place ops such as sub_(), mul_(), x[...] = ..., or +=)."
                )


def expect_dtype_device(
    ctx: CheckContext,
    cases: list[Case],
    path: tuple[int | str, ...] = (),
    what: str = "the result",
    zero_dim: bool = False,
    values: bool = True,
) -> None:
    """Output in the inputs' floating dtype and on their device (and 0-dim when asked)."""
    for case in cases:
        got = ctx.got(case)
        tensor = require_tensor(got, case, path, what)
        meta = got.meta.get(".".join(str(p) for p in path), {})
        want = pick(ctx.want(case).output, path)
        dtype = next(a.dtype for a in case.args if isinstance(a, torch.Tensor) and a.is_floating_point())
        if tensor.dtype != dtype:
            raise CheckFailed(
                f"Expected {what} in dtype {dtype} (the inputs' dtype), got {tensor.dtype} {where(case)}."
            )
        if meta.get("device") != ctx.device:
            raise CheckFailed(
                f"Expected {what} on device {ctx.device} (the inputs' device), got {shown_device(meta)} {where(case)}."
            )
        if zero_dim and tensor.dim() != 0:
            raise CheckFailed(f"Expected {what} to be a 0-dim tensor, got shape {list(tensor.shape)} {where(case)}.")
        if values and isinstance(want, torch.Tensor):
            assert_close(tensor, want, case, what)


def expect_memory_within_budget(
    ctx: CheckContext, case: Case, budget: MemoryBudget, fix: str = "Avoid materialising large intermediate tensors."
) -> None:
    """Peak memory of the measured case is within ``budget`` (the exercise's, ``SPEC.memory_budget``).

    ``fix`` tells a solution whose values are right how to get within the budget.
    """
    reading = ctx.memory(case)
    if reading.verified is False:
        raise CheckFailed(
            f"Your function's results {where(case)} are wrong, so its memory use is not measured: {reading.mismatch}"
        )
    if reading.learner_bytes is None:
        raise CheckFailed(f"The memory measurement {where(case)} did not complete: {reading.learner_message}")
    if reading.reference_bytes is None:
        raise CheckFailed("The reference's memory could not be measured; this check is the grader's fault.")
    ref = reading.reference_bytes
    allowed = budget.allowed(ref)
    used = reading.learner_bytes
    if used > allowed:
        raise CheckFailed(
            f"Peak memory {used / MiB:.1f} MiB {where(case)} is over the budget of {allowed / MiB:.1f} MiB "
            f"(max({budget.ratio:g} x the reference's {ref / MiB:.1f} MiB, reference + "
            f"{budget.slack_bytes / MiB:.0f} MiB); measured by {reading.source}). {fix}"
        )


def expect_empty_rows_add_zero(ctx: CheckContext, cases: list[Case], grad_name: str, hint: str = "") -> None:
    """Edge rows (length 1, or no valid token) match the reference; an empty row is never NaN."""
    for case in cases:
        got = ctx.got(case)
        require_no_error(got, case)
        out = got.output
        if "empty-row" in case.tags and isinstance(out, torch.Tensor) and not bool(torch.isfinite(out).all()):
            raise CheckFailed(
                f"Got {summarize(out)} {where(case)}: a row with no valid token must contribute 0 to the batch "
                f"mean, not 0/0 = NaN (clamp each row's token count to at least 1{hint})."
            )
        assert_output_close(ctx, case, (), "loss")
    expect_grads(ctx, cases, name=grad_name)


def expect_padding_does_not_leak(ctx: CheckContext, cases: list[Case], grad_name: str, overflow: str) -> None:
    """Huge but finite inputs at padded positions leave the loss and its gradient finite and right.

    ``overflow`` says how padding overflows in this exercise (e.g. "exp(new - old) overflows").
    """
    for case in cases:
        got = ctx.got(case)
        require_no_error(got, case)
        bad = [
            name
            for name, t in (("the loss", got.output), ("the gradient", got.grads.get("0")))
            if isinstance(t, torch.Tensor) and not bool(torch.isfinite(t).all())
        ]
        if bad:
            raise CheckFailed(
                f"{' and '.join(bad).capitalize()} came back non-finite {where(case)}: padded positions hold "
                f"finite but large values, {overflow} to inf there, and inf * 0 = NaN. Mask before exp: keep "
                "padding out with torch.where (select before the operation) instead of multiplying by the mask "
                "afterwards; an untaken torch.where branch that overflows still makes a NaN gradient."
            )
        assert_output_close(ctx, case, (), "loss")
    expect_grads(ctx, cases, name=grad_name)
