"""Naming the mistake: does a wrong answer behave like a known mutant where a check looks?

A learner who fails a check is compared, on every case that check reads, with each mutant
that fails it too; outcomes match when they raise the same exception class or return the
same values (within a loose tolerance). The mutant that agrees with the learner on the most
cases overall names the misconception.
"""

from __future__ import annotations

from typing import Any

import torch

from exercises.framework import Check, CheckContext, Exercise, Outcome, run_check
from exercises.outcomes import Opaque

def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape:
            return False
        rtol, atol = 1e-3, 1e-4
        return bool(torch.allclose(a.detach().double().cpu(), b.detach().double().cpu(), rtol=rtol, atol=atol, equal_nan=True))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, Opaque) or isinstance(b, Opaque):
        return False
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return False  # a tensor never behaves like a number, a tuple or None
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-6 * max(1.0, abs(b)) or (a != a and b != b)
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # learner data must never break the judge
        return False


def outcomes_match(a: Outcome, b: Outcome) -> bool:
    """Whether two outcomes are the same behaviour (errors by class, values within tolerance)."""
    if a.missing or b.missing or (a.error is None) != (b.error is None):
        return False
    if a.error is not None:
        if a.error.type != b.error.type or a.error.phase != b.error.phase:
            return False
        if a.error.phase == "call":
            return True
    if not _same(a.output, b.output):
        return False
    for key in set(a.grads) & set(b.grads):
        if (a.grads[key] is None) != (b.grads[key] is None):
            return False
        if a.grads[key] is not None and not _same(a.grads[key], b.grads[key]):
            return False
    for key in set(a.inputs_after) & set(b.inputs_after):
        if not _same(a.inputs_after[key], b.inputs_after[key]):
            return False
    return True


def name_misconception(exercise: Exercise, chk: Check, ctx: CheckContext,
                       mutant_outcomes: dict[str, dict[str, Outcome]],
                       breadth: dict[str, int] | None = None) -> str | None:
    """The misconception of the mutant that behaves like the learner where this check looks.

    The evidence is every case the check reads when it passes (run on the reference's
    outcomes), not only the case where the learner's run stopped. Among the mutants that
    fail the check and match there, the most specific one wins: the one that fails the
    fewest checks overall, so a missing shape check is named as such even when the learner
    also hard-coded a hyper-parameter. Ties go to the mutant agreeing with the learner on the
    most cases. ``breadth`` caches each mutant's count of failed checks across calls.
    """
    probe = ctx.with_outcomes(ctx._want)
    run_check(chk.fn, probe)
    evidence = sorted(probe.read | ctx.read)
    breadth = {} if breadth is None else breadth
    best: tuple[int, int, str] | None = None
    for m in exercise.mutants:
        if m.memory:
            continue
        outs = mutant_outcomes[m.name]
        mutant_ctx = ctx.with_outcomes(outs)
        if run_check(chk.fn, mutant_ctx)[0]:
            continue
        if not all(outcomes_match(ctx.got(ctx.case(cid)), outs.get(cid, Outcome(missing=True))) for cid in evidence):
            continue
        if m.name not in breadth:
            breadth[m.name] = sum(not run_check(c.fn, mutant_ctx)[0] for c in exercise.checks if not c.needs_memory)
        agreement = sum(outcomes_match(ctx._got.get(cid, Outcome(missing=True)), o) for cid, o in outs.items())
        key = (breadth[m.name], -agreement, m.misconception)
        if best is None or key < best:
            best = key
    return best[2] if best else None
