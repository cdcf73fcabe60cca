"""Grading trusted code in this process: the reference, a mutant, a combination of faults.

The judge runs learners in the jail; tests, the catalogue's seed sweep and the diagnosis
benchmark run known (trusted) functions here, through the harness's own call logic, so
their outcomes have exactly the structure the jail's have. Memory checks need the jail's
measurements and are left out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from exercises.evidence import Evidence
from exercises.framework import Case, CaseGen, Exercise, Outcome, Run, evaluate_check
from exercises.outcomes import run_in_process
from exercises.scoring import earning_checks


@dataclass
class OfflineRun:
    """Cases, outcomes and the per-check results of one in-process grading run."""

    exercise: Exercise
    cases: list[Case]
    got: dict[str, Outcome]
    want: dict[str, Outcome]
    results: dict[str, tuple[bool, str]]
    #: Per check: what it read on ``got`` (as the judge records it).
    seen: dict[str, Evidence] = field(default_factory=dict)

    @property
    def failed(self) -> list[str]:
        """Ids of the failed checks, in the exercise's order."""
        return [c.id for c in self.exercise.checks if c.id in self.results and not self.results[c.id][0]]

    def run(self) -> Run:
        """The run the checks read (no memory readings: memory checks are left out)."""
        return Run({c.id: c for c in self.cases}, self.got, self.want)


def single_threaded() -> None:
    """Run trusted code on one thread, as the judge does (its tensors are tiny)."""
    torch.set_num_threads(1)


def regular_cases(exercise: Exercise, seed: int) -> list[Case]:
    """The cases of one run that need no memory measurement."""
    return [c for c in exercise.build_cases(CaseGen(seed)) if not c.memory]


def grade_offline(
    exercise: Exercise,
    fn: Callable[..., Any],
    seed: int,
    *,
    cases: list[Case] | None = None,
    want: dict[str, Outcome] | None = None,
) -> OfflineRun:
    """Run ``fn`` and the reference on the regular cases of ``seed``; evaluate every non-memory check."""
    single_threaded()
    cases = regular_cases(exercise, seed) if cases is None else cases
    want = run_in_process(exercise.reference, cases, "reference.py") if want is None else want
    got = run_in_process(fn, cases, "submission.py")
    run = Run({c.id: c for c in cases}, got, want)
    results: dict[str, tuple[bool, str]] = {}
    seen: dict[str, Evidence] = {}
    for chk in exercise.checks:
        if not chk.needs_memory:
            passed, message, seen[chk.id] = evaluate_check(chk, run)
            results[chk.id] = (passed, message)
    return OfflineRun(exercise, cases, got, want, results, seen)


def score(exercise: Exercise, results: dict[str, tuple[bool, str]]) -> float:
    """The score these results earn, gated like the judge's (memory checks count as passed)."""
    passed = {c.id for c in exercise.checks if c.needs_memory or results.get(c.id, (False, ""))[0]}
    return round(sum(c.weight for c in earning_checks(exercise.checks, passed)), 2)
