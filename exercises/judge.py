"""The trusted judge: build cases, ask the jail, compare, and name misconceptions.

``Judge.grade(slug, source, seed)`` builds the exercise's cases from a seed mixed with the
server secret, computes the expected outcomes with the hidden reference *in this process*,
sends only the inputs and the learner's source to the jail, and evaluates each weighted
check on what came back. When a check fails and the learner's outcomes on the cases that
check read match a known mutant's, the feedback names that mutant's misconception.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import torch

from exercises import feedback
from exercises.framework import (
    Case,
    CaseGen,
    Check,
    CheckContext,
    Exercise,
    MemoryReading,
    Mutant,
    run_check,
)
from exercises.diagnosis import Diagnosis, diagnose
from exercises.outcomes import outcomes_from, run_in_process, to_call
from sandbox.harness import execute_calls
from exercises.registry import get_exercise
from sandbox.protocol import JobRequest, JobResult, JobStatus, SandboxLimits
from sandbox.runner import JailConfig, SandboxPool

log = logging.getLogger(__name__)

VERDICTS = (
    "graded", "syntax_error", "missing_function", "runtime_error", "time_limit",
    "memory_limit", "output_limit", "crashed", "internal_error",
)
_OUTPUT_CAP = 8 << 10
#: Longest check message kept: learners' error messages and tracebacks are quoted in them.
MESSAGE_CAP = 4 << 10
#: Digests of a measured case agree when within this fraction of the larger weighted |sum|.
_DIGEST_RTOL = 1e-4


def _cap(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    note = f" [... {len(text) - limit} characters cut]"
    return text[: max(0, limit - len(note))] + note


def compare_digests(got: dict[str, list[float]], want: dict[str, list[float]]) -> str:
    """"" when every digest the reference produced came back and agrees; else what differs.

    Names are the harness's (``c<id>.out``, ``c<id>.grad.<arg>``): the same for both sides.
    """
    for name, (w_sum, w_abs) in want.items():
        have = got.get(name)
        what = "the gradient" if ".grad." in name else "the result"
        if have is None:
            return f"{what} ({name.split('.', 1)[1]}) did not come back."
        g_sum, g_abs = have
        scale = max(abs(w_abs), abs(g_abs), 1e-12)
        if not (abs(g_sum - w_sum) <= _DIGEST_RTOL * scale + 1e-9 and abs(g_abs - w_abs) <= _DIGEST_RTOL * scale + 1e-9):
            return f"{what} ({name.split('.', 1)[1]}) differs from the reference's on the same input."
    return ""


@dataclass
class CheckOutcome:
    """One check's result, as stored and shown."""

    name: str
    weight: float
    passed: bool
    message: str = ""
    misconception: str | None = None
    hidden: bool = False


@dataclass
class GradeReport:
    """The judge's verdict on one submission."""

    verdict: str
    score: float | None
    message: str
    checks: list[CheckOutcome] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    peak_memory_bytes: int | None = None
    cpu_seconds: float | None = None
    line: int | None = None
    #: The mistakes found, each once: {"misconception": id, "title", "fix", "checks": [check names]}.
    diagnosis: list[dict[str, Any]] = field(default_factory=list)
    #: Root causes and summary for every renderer (exercises/feedback.py).
    feedback: dict[str, Any] | None = None


def mix_seed(secret: bytes, slug: str, seed: int | str) -> int:
    """A case seed that a learner cannot predict without the server secret."""
    digest = hmac.new(secret, f"{slug}:{seed}".encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") & ((1 << 63) - 1)


# -- the judge -------------------------------------------------------------------------------

def _truncate(text: str) -> str:
    return text if len(text) <= _OUTPUT_CAP else text[:_OUTPUT_CAP] + f"\n[{len(text) - _OUTPUT_CAP} characters cut]"


class Judge:
    """Grades submissions. Thread-safe; owns the jail pools.

    ``device`` is "cpu" or "cuda": on a GPU worker the learner's calls run on CUDA tensors
    (expected values are still computed on the CPU by the reference).
    """

    def __init__(self, secret: bytes, limits: SandboxLimits | None = None, pool_size: int = 1,
                 device: str = "cpu", *, jailed: bool = True, reuse: bool = True) -> None:
        self.secret = secret
        self.device = device
        # The judge's own tensors (cases, the reference, diagnosis runs) are tiny: one thread
        # avoids intra-op thread hand-offs that cost milliseconds per op on a loaded machine.
        torch.set_num_threads(1)
        config = JailConfig(limits=limits or SandboxLimits(), jailed=jailed, reuse=reuse, gpu=device == "cuda")
        self.pool = SandboxPool(pool_size, config)
        # Warm hosts let a submission's measured cases run beside its regular cases, on hosts
        # of their own (a separate pool, so neither kind of visit can starve the other). A
        # fresh interpreter per submission (reuse=False) serves both visits in turn.
        self._memory_pool = SandboxPool(pool_size, config) if reuse else None
        self._visits = ThreadPoolExecutor(max_workers=pool_size, thread_name_prefix="memory-visit") if reuse else None
        self._reference_work = ThreadPoolExecutor(max_workers=2, thread_name_prefix="reference")
        self._reference_config = config
        # Started with the others, so the first learner does not wait for it.
        self._reference_pool: SandboxPool | None = SandboxPool(1, config) if reuse else None
        self._reference_memory: dict[tuple[str, str], JobResult] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        if self._visits is not None:
            self._visits.shutdown(wait=True)
        self._reference_work.shutdown(wait=True)
        self.pool.close()
        if self._memory_pool is not None:
            self._memory_pool.close()
        if self._reference_pool is not None:
            self._reference_pool.close()

    # Trusted code (the reference, memory mutants) is measured in a host of its own: never
    # in a learner's jail. Peaks depend on shapes, not values, so each is measured once.
    def _measure_trusted(self, exercise: Exercise, case: Case, name: str, source: str) -> JobResult:
        key = (exercise.slug, name, case.signature())
        with self._lock:
            if key in self._reference_memory:
                return self._reference_memory[key]
            if self._reference_pool is None:
                self._reference_pool = SandboxPool(1, self._reference_config)
        result = self._run_memory_case(self._reference_pool, exercise, source, case)
        if result.status == JobStatus.OK:
            with self._lock:
                self._reference_memory[key] = result
        return result

    def _measure_reference(self, exercise: Exercise, case: Case) -> JobResult:
        return self._measure_trusted(exercise, case, "reference", exercise.reference_source)

    def _memory_request(self, exercise: Exercise, source: str, case: Case) -> tuple[JobRequest, dict[str, torch.Tensor]]:
        """A visit of its own for one measured case: warm-up call first, then the case."""
        tensors: dict[str, torch.Tensor] = {}
        calls = [to_call(case, tensors, self.device)]
        warmup = [to_call(case.warmup, tensors, self.device)] if case.warmup else []
        return JobRequest(source=source, function=exercise.function_name, calls=calls, warmup_calls=warmup), tensors

    def _run_memory_case(self, pool: SandboxPool, exercise: Exercise, source: str, case: Case) -> JobResult:
        return pool.run(*self._memory_request(exercise, source, case))

    def _measure_learner(self, run: Any, exercise: Exercise, source: str, cases: list[Case]) -> dict[str, JobResult]:
        """The learner's measured cases, each in a child of its own, through ``run``."""
        return {case.id: run(*self._memory_request(exercise, source, case)) for case in cases}

    def grade(self, slug: str, source: str, seed: int | str) -> GradeReport:
        """Grade ``source`` for exercise ``slug``; never raises for anything the learner did."""
        t0 = time.monotonic()
        exercise = get_exercise(slug)
        gen = CaseGen(mix_seed(self.secret, slug, seed), self.device)
        cases = exercise.build_cases(gen)
        regular = [c for c in cases if not c.memory]
        measured = [c for c in cases if c.memory]
        # The reference's expected outcomes and the measured case's digests are computed while the
        # jail works on the learner's calls (torch releases the GIL): off the critical path.
        want_pending = self._reference_work.submit(run_in_process, exercise.reference, regular, "reference.py")
        digests_pending = self._reference_work.submit(self._reference_digests, exercise, measured)
        tensors: dict[str, torch.Tensor] = {}
        calls = [to_call(c, tensors, self.device) for c in regular]
        t_cases = time.monotonic()
        with self.pool.session() as box:
            pending = None
            if measured and self._visits is not None and self._memory_pool is not None:
                pending = self._visits.submit(self._measure_learner, self._memory_pool.run, exercise, source, measured)
            job = box.run(JobRequest(source=source, function=exercise.function_name, calls=calls), tensors)
            t_jail = time.monotonic()
            # While the measured visit may still run: what the reference's results digest to on
            # the same inputs, so the measured run is graded and not only measured.
            expected_digests = digests_pending.result() if job.status == JobStatus.OK else {}
            if pending is not None:
                mine = pending.result()
            elif job.status == JobStatus.OK:
                mine = self._measure_learner(box.run, exercise, source, measured)
            else:
                mine = {}
        timings = {"build_cases": t_cases - t0, **{f"jail_{k}": v for k, v in job.timings.items()}}
        report = GradeReport(verdict="graded", score=None, message="", stdout=_truncate(job.stdout),
                             stderr=_truncate(job.stderr), peak_memory_bytes=job.peak_memory_bytes,
                             cpu_seconds=job.cpu_seconds, line=job.line)
        if job.status != JobStatus.OK:
            want_pending.cancel()
            digests_pending.cancel()
            report.verdict = job.status.value
            report.score = None if job.status == JobStatus.INTERNAL_ERROR else 0.0
            report.message = _cap(self._message_for(job, exercise), MESSAGE_CAP)
            report.timings = {**timings, "total": time.monotonic() - t0}
            feedback.attach(report, source, None, exercise.function_name)
            return report
        want = want_pending.result()
        got = outcomes_from(job.calls, job.tensors)
        memory: dict[str, MemoryReading] = {}
        if measured:
            # Speed and memory figures come from a verified measured run, or there are none.
            report.cpu_seconds = report.peak_memory_bytes = None
        for case in measured:
            ref = self._measure_reference(exercise, case)
            mine_case = mine[case.id]
            reading = MemoryReading(
                learner_bytes=mine_case.peak_memory_bytes if mine_case.status == JobStatus.OK else None,
                reference_bytes=ref.peak_memory_bytes if ref.status == JobStatus.OK else None,
                source=mine_case.memory_source, learner_status=mine_case.status.value, learner_message=mine_case.message)
            call = mine_case.call(case.id)
            if mine_case.status == JobStatus.OK and (call is None or call.error is not None):
                # A call that raised allocates little: its peak says nothing about the solution.
                reading.learner_bytes = None
                reading.learner_message = (f"your function raised {call.error.type}: {_cap(call.error.message, 500)}"
                                           if call and call.error else "no result came back")
            elif mine_case.status == JobStatus.OK and call is not None:
                reading.mismatch = compare_digests(call.digests, expected_digests.get(case.id, {}))
                reading.verified = not reading.mismatch
            memory[case.id] = reading
            if reading.verified and mine_case.cpu_seconds is not None:
                # The measured case is the speed figure, taken only from a run whose results were right.
                report.cpu_seconds = mine_case.cpu_seconds
                report.peak_memory_bytes = mine_case.peak_memory_bytes
        t_memory = time.monotonic()
        ctx = CheckContext({c.id: c for c in cases}, got, want, memory, self.device)
        report.checks, report.diagnosis, diagnosis_seconds = self._evaluate(exercise, ctx, regular)
        total = sum(c.weight for c in report.checks if c.passed)
        report.score = round(total, 2)
        passed = sum(c.passed for c in report.checks)
        report.message = (f"All {len(report.checks)} checks passed." if passed == len(report.checks)
                          else f"{passed} of {len(report.checks)} checks passed.")
        t_end = time.monotonic()
        report.timings = {**timings, "learner_jail": t_jail - t_cases, "memory_cases": t_memory - t_jail,
                          "checks": t_end - t_memory, "diagnosis": diagnosis_seconds, "total": t_end - t0}
        feedback.attach(report, source, got, exercise.function_name)
        return report

    @staticmethod
    def _reference_digests(exercise: Exercise, measured: list[Case]) -> dict[str, dict[str, list[float]]]:
        """Per measured case, the digests of the reference's outputs and gradients (in this process)."""
        found: dict[str, dict[str, list[float]]] = {}
        for case in measured:
            tensors: dict[str, torch.Tensor] = {}
            call = to_call(case, tensors, "cpu")
            records, _ = execute_calls(exercise.reference, [call], tensors, "reference.py")
            found[case.id] = dict(records[0].get("digests") or {})
        return found

    def _evaluate(self, exercise: Exercise, ctx: CheckContext,
                  regular: list[Case]) -> tuple[list[CheckOutcome], list[dict[str, Any]], float]:
        """The check outcomes (messages capped), the diagnosis, and the seconds diagnosis took."""
        outcomes, diagnosis, seconds = self._run_checks(exercise, ctx, regular)
        _shorten_repeated_tracebacks(outcomes, ctx)
        for outcome in outcomes:
            outcome.message = _cap(outcome.message, MESSAGE_CAP)
            outcome.misconception = _cap(outcome.misconception, 400) if outcome.misconception else None
        return outcomes, diagnosis, seconds

    def _run_checks(self, exercise: Exercise, ctx: CheckContext,
                    regular: list[Case]) -> tuple[list[CheckOutcome], list[dict[str, Any]], float]:
        """Evaluate every check, name the mistakes behind the failures, withhold ungated points."""
        outcomes: list[CheckOutcome] = []
        failed: list[Check] = []
        memory_named: dict[str, Mutant] = {}
        seen: dict[str, tuple[set[str], set[str]]] = {}
        for chk in exercise.checks:
            ctx.read, ctx.aspects = set(), set()
            passed, message = run_check(chk.fn, ctx)
            seen[chk.id] = (ctx.read, ctx.aspects)
            outcomes.append(CheckOutcome(name=chk.name, weight=chk.weight, passed=passed, message=message,
                                         hidden=chk.hidden))
            if not passed and chk.needs_memory:
                found = self._name_memory_misconception(exercise, chk, ctx)
                if found is not None:
                    memory_named[chk.id] = found
            elif not passed:
                failed.append(chk)
        diag = diagnose(exercise, ctx, failed, seen=seen) if failed else Diagnosis()
        diag.by_check.update({cid: [m] for cid, m in memory_named.items()})
        for chk, outcome in zip(exercise.checks, outcomes):
            named = diag.by_check.get(chk.id, [])
            if named:
                outcome.misconception = named[0].misconception
                titles = "; ".join(m.misconception for m in named)
                outcome.message += (f" This matches a known mistake: {titles}" if len(named) == 1
                                    else f" This matches known mistakes together: {titles}")
            elif chk.id in diag.unexplained:
                outcome.message += " No known mistake explains this failure: compare what was expected with what came back."
        _withhold_contract_points(exercise.checks, outcomes)
        return outcomes, diagnosis_entries(exercise, diag), diag.seconds

    def _name_memory_misconception(self, exercise: Exercise, chk: Any, ctx: CheckContext) -> Mutant | None:
        """The memory mutant that also fails this check with the peak nearest the learner's.

        Only a measured run whose results were right can be a memory mistake (a wrong answer
        fails this check for its values), and only a peak nearer the mutant's than the
        reference's is named.
        """
        if any(r.verified is False or r.learner_bytes is None for r in ctx._memory.values()):
            return None
        best: tuple[float, Mutant] | None = None
        for m in (m for m in exercise.mutants if m.memory):
            readings: dict[str, MemoryReading] = {}
            for case in ctx.cases():
                if case.memory and case.id in ctx._memory:
                    mine = ctx._memory[case.id]
                    run = self._measure_trusted(exercise, case, m.name, m.source(exercise.function_name))
                    readings[case.id] = MemoryReading(run.peak_memory_bytes, mine.reference_bytes, mine.source,
                                                      run.status.value)
            learner = [r.learner_bytes for r in ctx._memory.values() if r.learner_bytes]
            theirs = [r.learner_bytes for r in readings.values() if r.learner_bytes]
            if not learner or not theirs or run_check(chk.fn, ctx.with_outcomes(ctx._got, readings))[0]:
                continue
            distance = abs(math.log(max(learner) / max(theirs)))
            references = [r.reference_bytes for r in ctx._memory.values() if r.reference_bytes]
            to_reference = abs(math.log(max(learner) / max(references))) if references else math.inf
            if distance < min(math.log(4), to_reference) and (best is None or distance < best[0]):
                best = (distance, m)
        return best[1] if best else None

    @staticmethod
    def _message_for(job: JobResult, exercise: Exercise) -> str:
        if job.status == JobStatus.MISSING_FUNCTION:
            return (f"Your file does not define a function named {exercise.function_name}() "
                    f"({job.message}). Check the name and the signature against the exercise.")
        return job.message


def misconception_id(exercise: Exercise, m: Mutant) -> str:
    """A mistake's stable id: ``<slug>/<fault>`` (e.g. ``actor-loss/max-for-min``)."""
    return f"{exercise.slug}/{m.fault or m.name.replace('_', '-')}"


def diagnosis_entries(exercise: Exercise, diag: Diagnosis) -> list[dict[str, Any]]:
    """The report's ``diagnosis``: each mistake once, with the checks it explains and its fix."""
    entries = [{"misconception": misconception_id(exercise, f.mutant), "title": f.mutant.misconception,
                "fix": f.mutant.fix, "checks": f.checks} for f in diag.findings(exercise.checks)]
    if diag.unexplained:
        names = [c.name for c in exercise.checks if c.id in diag.unexplained]
        entries.append({"misconception": f"{exercise.slug}/unexplained",
                        "title": "No known mistake explains these failures",
                        "fix": "Compare what was expected with what came back in these checks' messages.",
                        "checks": names})
    return entries


def _withhold_contract_points(checks: list[Check], outcomes: list[CheckOutcome]) -> None:
    """Contract details earn points only when the core value checks pass (EXERCISES.md)."""
    core = [o.name for c, o in zip(checks, outcomes) if c.core and not o.passed]
    if not core:
        return
    for chk, outcome in zip(checks, outcomes):
        if chk.gated and outcome.passed:
            outcome.passed = False
            outcome.message = (f"Not counted yet: this contract detail earns its points only once the values "
                               f"on ordinary inputs are right (failed: {'; '.join(core)}).")


def _shorten_repeated_tracebacks(outcomes: list[CheckOutcome], ctx: CheckContext) -> None:
    """Show each distinct traceback of the learner's once; later checks point back to it.

    A function that raises on every call would otherwise repeat the same traceback in every
    failing check.
    """
    tracebacks = {o.error.traceback for o in ctx._got.values() if o.error is not None and o.error.traceback}
    shown: set[str] = set()
    for outcome in outcomes:
        for tb in tracebacks:
            if tb in outcome.message:
                if tb in shown:
                    outcome.message = outcome.message.replace("\n" + tb, " (traceback as above)").replace(
                        tb, "(traceback as above)")
                shown.add(tb)
