"""Comparisons that explain themselves: what was expected, what came back, and where.

Every helper raises :class:`~exercises.framework.CheckFailed` with a message a learner can
act on ("3 of 4096 elements differ; first at [0, 5]: expected -1.2, got -2.0; worst at
[2, 17] ...") and returns quietly when the values agree.
"""

from __future__ import annotations

import re
from typing import Any

import torch

from exercises.framework import Case, CheckFailed, Outcome
from sandbox.verdicts import DEVICE_TYPES, TENSOR_LAYOUTS

#: Default tolerances per dtype: (rtol, atol). Every starter states them (docs/contract.md, "Numbers").
TOLERANCES = {
    torch.float64: (1e-10, 1e-12),
    torch.float32: (1e-4, 1e-5),
    torch.bfloat16: (2e-2, 2e-2),
    torch.float16: (5e-3, 5e-3),
}


def tolerance(dtype: torch.dtype) -> tuple[float, float]:
    return TOLERANCES.get(dtype, (1e-4, 1e-5))


def cancellation_atol(
    mean: torch.Tensor, spread: torch.Tensor, count: int, scaled: torch.Tensor, dtype: torch.dtype
) -> torch.Tensor:
    """Extra absolute tolerance for ``scaled = (x - mean) / spread`` when ``x`` nearly cancels.

    docs/contract.md ("Numbers"): the tolerance grows by the cancellation factor ``|mean| / spread``.
    The bound behind it: any summation order computes a mean of ``count`` values to within
    about ``count * u * |mean|`` (u the working precision's epsilon: float64 for float64
    inputs, float32 otherwise, the accumulation the contract allows), and a variance from
    centered values, two-pass, ``torch.var`` or a Welford/Chan merge, to within the same error
    relative to ``spread``; so ``scaled`` is off by up to ``count * u * |mean| / spread * (1 + |scaled|)``.
    ``E[x^2] - E[x]^2`` loses ``|mean| / spread`` times more, and still fails. ``spread`` is
    what the result is divided by (``sqrt(var + eps)``, ``std + eps``); where it is 0 (every
    value equal) the slack is 0: a constant input has its own exact answer. All arguments
    broadcast to ``scaled``'s shape; the result is float64.
    """
    u = torch.finfo(torch.float64 if dtype == torch.float64 else torch.float32).eps
    mean, spread = mean.to(torch.float64), spread.to(torch.float64)
    kappa = torch.where(spread > 0, mean.abs() / torch.where(spread > 0, spread, 1.0), 0.0)
    return count * u * kappa * (1.0 + scaled.detach().to(torch.float64).abs())


def _fmt(x: float, other: float | None = None) -> str:
    """Enough significant digits that two different numbers never print alike."""
    for digits in (6, 9, 12, 17):
        text = f"{x:.{digits}g}"
        if other is None or text != f"{other:.{digits}g}":
            return text
    return f"{x!r}"


def _index(flat: int, shape: torch.Size) -> list[int]:
    idx = []
    for dim in reversed(shape):
        idx.append(flat % dim)
        flat //= dim
    return list(reversed(idx))


#: A learner's tensor is never printed whole in a message: at most this many values.
_SUMMARY_VALUES = 8


def summarize(t: torch.Tensor) -> str:
    """A short description of a tensor for messages: dtype, shape and its first few values."""
    flat = t.detach().reshape(-1)[:_SUMMARY_VALUES].to(torch.float64).cpu().tolist()
    values = ", ".join(_fmt(v) for v in flat) + (", ..." if t.numel() > _SUMMARY_VALUES else "")
    dtype = str(t.dtype).removeprefix("torch.")
    return f"{dtype}{list(t.shape)} [{values}]" if t.dim() else f"{_fmt(float(flat[0]))} ({dtype})"


#: A case description that names the input itself ("torch.float32 inputs", "a large input"):
#: "on input" would say it twice ("on input torch.float32 inputs").
_NAMES_INPUT = re.compile(r"\binputs?\b")


def where(case: Case, hidden: bool = False) -> str:
    """'on input ...' for messages (hidden checks name the case without its contents); a case
    whose description names its input reads 'on torch.float32 inputs: (...)'."""
    if hidden:
        return f"on hidden case {case.id}"
    return f"on {case.describe()}" if _NAMES_INPUT.search(case.about) else f"on input {case.describe()}"


def wrong(what: str) -> str:
    """'Wrong loss', 'Wrong estimate': the opening of a mismatch's sentence for ``what`` (its
    article dropped: "Wrong the estimate" is not English)."""
    return f"Wrong {what.removeprefix('the ')}"


def explain_mismatch(got: torch.Tensor, want: torch.Tensor, rtol: float, atol: float | torch.Tensor) -> str | None:
    """None when close; otherwise a sentence locating the first and worst mismatches.

    ``atol`` is a number, or a float64 tensor of ``want``'s shape (per-element tolerances, as
    :func:`cancellation_atol` gives).
    """
    if got.shape != want.shape:
        return f"expected shape {list(want.shape)}, got shape {list(got.shape)}"
    g = got.detach().to(torch.float64).cpu()
    w = want.detach().to(torch.float64).cpu()
    if g.numel() == 0:
        return None
    both_nan = torch.isnan(g) & torch.isnan(w)
    same_inf = torch.isinf(w) & (g == w)
    diff = (g - w).abs()
    bad = ~((diff <= atol + rtol * w.abs()) | both_nan | same_inf)
    bad |= torch.isnan(g) & ~torch.isnan(w)
    count = int(bad.sum())
    if count == 0:
        return None
    if g.dim() == 0:
        return f"expected {_fmt(float(w), float(g))}, got {_fmt(float(g), float(w))}"
    flat_bad = bad.flatten().nonzero().flatten()
    first = int(flat_bad[0])
    d = torch.where(bad, torch.nan_to_num(diff, nan=float("inf")), torch.zeros_like(diff)).flatten()
    worst = int(d.argmax())
    gf, wf = g.flatten(), w.flatten()
    text = (
        f"{count} of {g.numel()} elements differ; first at {_index(first, g.shape)}: expected "
        f"{_fmt(float(wf[first]), float(gf[first]))}, got {_fmt(float(gf[first]), float(wf[first]))}"
    )
    if worst != first:
        text += (
            f"; worst at {_index(worst, g.shape)}: expected {_fmt(float(wf[worst]), float(gf[worst]))}, "
            f"got {_fmt(float(gf[worst]), float(wf[worst]))}"
        )
    return text


def closed_word(value: Any, closed: frozenset[str]) -> str | None:
    """A word of a tensor's record (its device, its layout) when it is one of its closed list
    (``sandbox.verdicts``), else None. A message quotes only what this returns: the record came
    from the learner's process, and a word of its own choosing could spell the inputs (review 6,
    attack 1). The trusted side refuses such a record already; this keeps every quoting site
    to the closed list whatever path the record took."""
    return value if isinstance(value, str) and value in closed else None


def shown_device(meta: dict[str, Any]) -> str:
    """The device a tensor's record names, as a message quotes it."""
    return closed_word(meta.get("device"), DEVICE_TYPES) or "an unsupported device"


def require_no_error(got: Outcome, case: Case, hidden: bool = False) -> None:
    """Fail with the learner's exception when the call raised."""
    if got.missing:
        raise CheckFailed(f"No result came back {where(case, hidden)}.")
    if got.error is not None:
        tb = f"\n{got.error.traceback}" if got.error.traceback else ""
        phase = "during backward()" if got.error.phase == "backward" else ""
        raise CheckFailed(
            f"Raised {got.error.type}{' ' + phase if phase else ''}: {got.error.message} {where(case, hidden)}{tb}"
        )


def pick(value: Any, path: list[int | str] | tuple[int | str, ...]) -> Any:
    """Follow a path into a returned structure; None when it does not exist."""
    for key in path:
        try:
            value = value[key]
        except (KeyError, IndexError, TypeError):
            return None
    return value


def require_tensor(
    got: Outcome, case: Case, path: tuple[int | str, ...] = (), what: str = "the result", hidden: bool = False
) -> torch.Tensor:
    """The tensor at ``path`` in the learner's output, or a failure saying what came instead.

    A call that returned but whose backward pass failed still has values: they are judged
    here, and the backward failure by the gradient checks (a detached result must not cost
    the value checks too).
    """
    if got.missing or got.error is None or got.error.phase != "backward" or got.output is None:
        require_no_error(got, case, hidden)
    value = pick(got.output, path)
    if not isinstance(value, torch.Tensor):
        meta = got.meta.get(".".join(str(p) for p in path), {})
        kind = meta.get("type") or type(value).__name__
        if kind == "tensor":
            layout = closed_word(meta.get("layout"), TENSOR_LAYOUTS)
            kind = f"a {layout} tensor" if layout is not None else "a tensor of an unsupported layout"
        raise CheckFailed(f"Expected {what} to be a torch.Tensor, got {kind} {where(case, hidden)}.")
    return value


def assert_close(
    got: torch.Tensor,
    want: torch.Tensor,
    case: Case,
    what: str = "the result",
    rtol: float | None = None,
    atol: float | torch.Tensor | None = None,
    hidden: bool = False,
) -> None:
    """Fail unless ``got`` matches ``want`` within the tolerance of ``want``'s dtype (or the
    ``rtol`` and ``atol`` given: ``atol`` may be per element, see :func:`explain_mismatch`)."""
    drtol, datol = tolerance(want.dtype)
    message = explain_mismatch(got, want, drtol if rtol is None else rtol, datol if atol is None else atol)
    if message is not None:
        raise CheckFailed(f"{wrong(what)} {where(case, hidden)}: {message}.")


def assert_output_close(
    ctx: Any,
    case: Case,
    path: tuple[int | str, ...] = (),
    what: str = "the result",
    rtol: float | None = None,
    atol: float | None = None,
    hidden: bool = False,
) -> None:
    """Compare the learner's output at ``path`` with the reference's, for one case."""
    got = require_tensor(ctx.got(case), case, path, what, hidden)
    want = pick(ctx.want(case).output, path)
    assert isinstance(want, torch.Tensor), f"reference returned no tensor for case {case.id}"
    assert_close(got, want, case, what, rtol, atol, hidden)
