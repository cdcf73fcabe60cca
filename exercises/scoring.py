"""From a run to the report's checks and score: evaluate, name the mistakes, gate, score.

:func:`evaluate` runs every check of an exercise on a :class:`~exercises.framework.Run`,
asks diagnosis to name the mistakes behind the failed value checks (and a memory check's
measured-peak naming, supplied by the judge, behind a failed memory check), appends each
named mistake to its check's message, withholds the points of contract details until the
core values are right (docs/contract.md, "Numbers" and "Gradients"), and scores what is left.

Which checks failed, and so the score, comes from the run's (seeded) cases only. The mistakes
named come from the submission's :class:`Probes` when the judge supplies them: a fixed
diagnostic probe set per exercise version, the same whatever the grading seed, so the same file
gets the same names on every seed (issue 37). The probe inputs are the same for every
submission, so a file can learn to recognise them and behave otherwise there: the probes alone
are never believed. A mistake they name is kept only where the seeded run's own outputs show it
too, and a failed check they leave without a name gets the seeded run's own diagnosis
(:func:`on_failed`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from exercises.diagnosis import Diagnosis, diagnose
from exercises.evidence import Evidence
from exercises.framework import Check, Exercise, Run, evaluate_check
from exercises.mistakes import Mistake
from exercises.report import WITHHELD, CheckOutcome, cap_messages, shorten_repeated_tracebacks

#: Names the memory mistake behind a failed memory check, from measured peaks (or None).
MemoryNaming = Callable[[Exercise, Check, Run], Mistake | None]


@dataclass
class Evaluation:
    """The checks' outcomes (named, gated, capped), the diagnosis, the score and its summary."""

    checks: list[CheckOutcome]
    diagnosis: list[dict[str, Any]] = field(default_factory=list)
    diagnosis_seconds: float = 0.0
    #: Why diagnosis was dropped (the exception's class name), or None.
    diagnosis_skipped: str | None = None

    @property
    def score(self) -> float:
        """The points of the passed checks (after gating), to two decimals."""
        return round(sum(c.weight for c in self.checks if c.passed), 2)

    @property
    def message(self) -> str:
        passed = sum(c.passed for c in self.checks)
        total = len(self.checks)
        return f"All {total} checks passed." if passed == total else f"{passed} of {total} checks passed."


class Probes:
    """A submission's diagnostic probe run, made on first need, and the diagnosis it gives.

    ``make`` returns the probe run (the exercise's cases built from a seed that depends on the
    exercise's version and the server secret, never on the grading seed; the learner's outcomes
    from a jail visit of their own, validated as any other), or a reason it could not be made,
    or None when none was made (too little of the job's limits left): then :attr:`unmade`, and
    the graded run's own diagnosis names the mistakes.
    It is called at most once, only when a check failed; the diagnosis is computed once too, so
    grading one file on several seeds diagnoses it once.
    """

    def __init__(self, make: Callable[[], Run | str | None]) -> None:
        self._make = make
        self._diagnosis: Diagnosis | None = None
        #: Whether ``make`` made no probe run (diagnosis then looks at the graded run alone).
        self.unmade = False

    def diagnosis(self, exercise: Exercise) -> Diagnosis:
        """Every non-memory check on the probe run, and the mistakes behind those that fail there."""
        if self._diagnosis is None:
            self._diagnosis = self._diagnose(exercise)
        return self._diagnosis

    def _diagnose(self, exercise: Exercise) -> Diagnosis:
        try:
            run = self._make()
        except Exception as exc:  # naming mistakes is a courtesy: grading never depends on it
            return Diagnosis(skipped=f"probes: {type(exc).__name__}")
        if run is None:
            self.unmade = True
            return Diagnosis()
        if isinstance(run, str):
            return Diagnosis(skipped=f"probes: {run}")
        seen: dict[str, Evidence] = {}
        failed = []
        for chk in exercise.checks:
            if chk.needs_memory:
                continue  # named from measured peaks of the graded run (MemoryNaming)
            passed, _, seen[chk.id] = evaluate_check(chk, run)
            if not passed:
                failed.append(chk)
        diag = safe_diagnose(exercise, run, failed, seen) if failed else Diagnosis()
        diag.probed = {c.id for c in failed}
        return diag


def on_failed(
    exercise: Exercise, run: Run, seen: dict[str, Evidence], diag: Diagnosis, failed: list[Check]
) -> Diagnosis:
    """The probes' diagnosis as it bears on the checks that failed in this grading, checked
    against this run's own outputs.

    The probe inputs are the same for every submission of an exercise version, so a file that
    recognises them can behave there as it does not on the graded inputs; the probes alone are
    not believed. First the mistakes the probes named are searched on this run's cases
    (``only``): a mistake this run shows on no failed check is contradicted by the learner's
    own outputs and is dropped everywhere (:func:`cross_checked`). Then, per failed check:

    - a check the probes fail keeps the confirmed mistakes they name there (the seed-stable
      names); one they found unexplained stays so (no name is guessed from the seed's cases);
    - a check the probes pass (a failure only this seed's cases show) gets the confirmed
      mistakes this run shows on it, or is unexplained;
    - this run's own diagnosis decides a check where the probes give nothing to stand on: they
      named only contradicted mistakes there, or the learner's call raised there in the probe
      visit and on no graded case of a failed check (where it raised in both visits, its
      exception explains the failure, as the report's root causes say), or it is a check they
      pass while they confirmed no mistake at all (every
      name contradicted, or no check failed on the probes: a file correct on the probe inputs
      and wrong on the graded ones).

    Besides the probes' diagnosis (once per file), a grading spends at most two searches of
    its own: the confirmation (the probes' mistakes only) and the own diagnosis of the checks left.
    """
    if diag.skipped is not None:
        return replace(diag, by_check={}, unexplained=[])
    order = [c.id for c in failed]
    found = {m.named_id for named in diag.by_check.values() for m in named}
    confirmation = safe_diagnose(exercise, run, failed, seen, only=found)
    confirmed = cross_checked(diag, confirmation)
    # the probes stand for the checks they pass when a mistake they named is confirmed, or when
    # they saw failures and honestly named none (nothing to contradict)
    stand = bool(confirmed) or (bool(diag.probed) and not found)
    # whether the learner's call raised on the graded cases of some failed check (one neither
    # named nor unexplained there): a crash the probes saw is then no contradiction
    raises = confirmation.skipped is None and any(
        c.id not in confirmation.unexplained and not confirmation.by_check.get(c.id) for c in failed
    )
    by_check: dict[str, list[Mistake]] = {}
    unexplained: list[str] = []
    left: list[Check] = []
    for chk in failed:
        if chk.id in diag.probed:
            named = diag.by_check.get(chk.id, [])
            kept = [m for m in named if m.named_id in confirmed]
            if kept:
                by_check[chk.id] = kept
            elif not named and chk.id in diag.unexplained:
                unexplained.append(chk.id)
            elif named or not raises:
                # contradicted names; or the learner's call raised there on the probes (neither
                # named nor unexplained) and never on the graded cases of a failed check
                left.append(chk)
            elif confirmation.by_check.get(chk.id):
                by_check[chk.id] = confirmation.by_check[chk.id]
            # else: the learner's call raised in both visits; its exception explains the failure
        elif not stand or confirmation.skipped is not None:
            left.append(chk)
        elif confirmation.by_check.get(chk.id):
            by_check[chk.id] = confirmation.by_check[chk.id]
        elif chk.id in confirmation.unexplained:
            unexplained.append(chk.id)
    totals = [diag, confirmation]
    if left:
        own = safe_diagnose(exercise, run, left, seen)
        totals.append(own)
        if own.skipped is None:
            by_check.update(own.by_check)
            unexplained += own.unexplained
        else:
            unexplained += [c.id for c in left]
    return replace(
        diag,
        by_check={cid: by_check[cid] for cid in order if cid in by_check},
        unexplained=sorted(set(unexplained), key=order.index),
        seconds=sum(d.seconds for d in totals),
        runs=sum(d.runs for d in totals),
        elements=sum(d.elements for d in totals),
        exhausted=any(d.exhausted for d in totals),
    )


def cross_checked(probed: Diagnosis, confirmation: Diagnosis) -> set[str]:
    """The names (``Mistake.named_id``) of the probes' mistakes that the graded run's own outputs
    show on some failed check (``confirmation``: the graded run searched for those mistakes
    only). The others are contradicted by what the learner's code did on the graded inputs.
    A confirmation that could not be made confirms nothing."""
    if confirmation.skipped is not None:
        return set()
    shown = {m.named_id for named in confirmation.by_check.values() for m in named}
    return {m.named_id for named in probed.by_check.values() for m in named} & shown


def evaluate(
    exercise: Exercise, run: Run, name_memory_mistake: MemoryNaming, probes: Probes | None = None
) -> Evaluation:
    """Every check of ``exercise`` on ``run``, the mistakes behind the failures, gated and capped.

    With ``probes``, the mistakes are named from the diagnostic probe run (see :class:`Probes`);
    without, from ``run`` itself (in-process tools)."""
    outcomes: list[CheckOutcome] = []
    failed: list[Check] = []
    memory_named: dict[str, Mistake] = {}
    seen: dict[str, Evidence] = {}
    for chk in exercise.checks:
        passed, message, seen[chk.id] = evaluate_check(chk, run)
        outcomes.append(
            CheckOutcome(
                name=chk.name,
                weight=chk.weight,
                passed=passed,
                message=message,
                hidden=chk.hidden,
                check_id=exercise.check_id(chk),
                self_reported=chk.self_reported,
            )
        )
        if not passed and chk.needs_memory:
            found = name_memory_mistake(exercise, chk, run)
            if found is not None:
                memory_named[chk.id] = found
        elif not passed:
            failed.append(chk)
    if not failed:
        diag = Diagnosis()
    elif probes is None:
        diag = safe_diagnose(exercise, run, failed, seen)
    else:
        probed = probes.diagnosis(exercise)
        # no probe visit made (too little of the job's limits left): the run's own diagnosis
        diag = (
            safe_diagnose(exercise, run, failed, seen)
            if probes.unmade
            else on_failed(exercise, run, seen, probed, failed)
        )
    diag.by_check.update({cid: [m] for cid, m in memory_named.items()})
    name_mistakes(exercise.checks, outcomes, diag)
    withhold_contract_points(exercise.checks, outcomes)
    tracebacks = {o.error.traceback for o in run.got.values() if o.error is not None and o.error.traceback}
    shorten_repeated_tracebacks(outcomes, tracebacks)
    cap_messages(outcomes)
    return Evaluation(outcomes, diagnosis_entries(exercise, diag), diag.seconds, diag.skipped)


#: What a failed check's message says when diagnosis was dropped.
DIAGNOSIS_SKIPPED = " (Diagnosis skipped: the grader could not look for known mistakes on this submission.)"


def safe_diagnose(
    exercise: Exercise, run: Run, failed: list[Check], seen: dict[str, Evidence], only: set[str] | None = None
) -> Diagnosis:
    """:func:`~exercises.diagnosis.diagnose`, which can only drop itself: anything it raises
    (a MemoryError included) leaves the checks, the verdict and the score as they are, and the
    diagnosis is marked skipped. Naming mistakes is a courtesy; grading never depends on it."""
    try:
        return diagnose(exercise, run, failed, seen=seen, only=only)
    except Exception as exc:  # MemoryError and RecursionError are Exceptions too
        return Diagnosis(skipped=type(exc).__name__)


def name_mistakes(checks: list[Check], outcomes: list[CheckOutcome], diag: Diagnosis) -> None:
    """Each failed check's message ends with the mistakes named on it, or says none fits."""
    for chk, outcome in zip(checks, outcomes):
        named = diag.by_check.get(chk.id, [])
        if diag.skipped is not None and not outcome.passed and not named:
            outcome.message += DIAGNOSIS_SKIPPED
        elif named:
            outcome.mistake_title, outcome.mistake_id = named[0].title, named[0].id
            titles = "; ".join(m.title for m in named)
            outcome.message += (
                f" This matches a known mistake: {titles}"
                if len(named) == 1
                else f" This matches known mistakes together: {titles}"
            )
        elif chk.id in diag.unexplained:
            outcome.message += " No known mistake explains this failure: compare what was expected with what came back."


def diagnosis_entries(exercise: Exercise, diag: Diagnosis) -> list[dict[str, Any]]:
    """The report's ``diagnosis``: each mistake once, with the checks it explains and its fix."""
    entries = [
        {"mistake_id": f.mistake.id, "title": f.mistake.title, "fix": f.mistake.fix, "checks": f.checks}
        for f in diag.findings(exercise.checks)
    ]
    if diag.unexplained:
        names = [c.name for c in exercise.checks if c.id in diag.unexplained]
        entries.append(
            {
                "mistake_id": f"{exercise.slug}/unexplained",
                "title": "No known mistake explains these failures",
                "fix": "Compare what was expected with what came back in these checks' messages.",
                "checks": names,
            }
        )
    return entries


def earning_checks(checks: list[Check], passed: set[str]) -> list[Check]:
    """The passed checks whose points count: gated ones only when every core check passed."""
    core_ok = all(c.id in passed for c in checks if c.core)
    return [c for c in checks if c.id in passed and (core_ok or not c.gated)]


def withhold_contract_points(checks: list[Check], outcomes: list[CheckOutcome]) -> None:
    """Contract details earn points only when the core value checks pass (docs/contract.md)."""
    passed = {c.id for c, o in zip(checks, outcomes) if o.passed}
    earning = {c.id for c in earning_checks(checks, passed)}
    core = [o.name for c, o in zip(checks, outcomes) if c.core and not o.passed]
    for chk, outcome in zip(checks, outcomes):
        if outcome.passed and chk.id not in earning:
            outcome.passed = False
            outcome.message = (
                f"{WITHHELD} this contract detail earns its points only once the values "
                f"on ordinary inputs are right (failed: {'; '.join(core)})."
            )
