"""The jail visits of a grading run, and what they measured: pools, peaks, digests.

:class:`Pools` owns everything a judge runs jails and trusted work with: the learners' pool
for their regular calls, a second pool for their measured cases (a child each, beside the
regular visit, so neither kind can starve the other), a host of its own for measuring trusted
code (the reference, memory mistakes: never in a learner's jail), with a cache of those
peaks (they depend on shapes, not values, so each is measured once), and two threads that
compute the reference's expected outcomes and the measured cases' digests while the jail
works on the learner's calls (torch releases the GIL: off the critical path).

A measured case's results do not come back (they are large); their digests do
(:func:`compare_digests`), so the measured run is graded and not only measured: a peak is
believed only from a run whose results were right.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import torch

from exercises.framework import Case, Check, Exercise, MemoryReading, Outcome, Run, evaluate_check
from exercises.mistakes import Mistake
from exercises.outcomes import run_in_process, to_call
from sandbox.harness import execute_calls
from sandbox.protocol import JobRequest, JobResult, JobStatus, SandboxLimits
from sandbox.runner import JailConfig, SandboxPool
from sandbox.text import cap

#: Digests of a measured case agree when within this fraction of the larger weighted |sum|.
DIGEST_RTOL = 1e-4
#: A digest's sampled elements agree within this (relative, then absolute to the largest
#: sampled value): ten times float32's element tolerance, because the measured input is long
#: and a correct formula's rounding grows with it, yet far below errors a sum lets cancel.
SAMPLE_RTOL = 1e-3
#: Longest quote of the learner's exception in a memory reading's message.
_ERROR_QUOTE = 500

Digests = dict[str, list[float]]


def compare_digests(got: Digests, want: Digests) -> str:
    """ "" when every digest the reference produced came back and agrees; else what differs.

    Names are the harness's (``c<id>.out``, ``c<id>.grad.<arg>``): the same for both sides.
    """
    for name, digest in want.items():
        w_sum, w_abs = digest[0], digest[1]
        have = got.get(name)
        what = "the gradient" if ".grad." in name else "the result"
        if have is None:
            return f"{what} ({name.split('.', 1)[1]}) did not come back."
        if len(have) != len(want[name]):
            return f"{what} ({name.split('.', 1)[1]}) did not come back whole."
        if not all(math.isfinite(x) for x in have) and all(math.isfinite(x) for x in digest):
            return f"{what} ({name.split('.', 1)[1]}) holds NaN or infinite values where the reference's are finite."
        g_sum, g_abs = have[0], have[1]
        scale = max(abs(w_abs), abs(g_abs), 1e-12)
        if not (abs(g_sum - w_sum) <= DIGEST_RTOL * scale + 1e-9 and abs(g_abs - w_abs) <= DIGEST_RTOL * scale + 1e-9):
            return f"{what} ({name.split('.', 1)[1]}) differs from the reference's on the same input."
        samples, mine = want[name][2:], have[2:]
        floor = SAMPLE_RTOL * max((abs(x) for x in samples), default=0.0) + 1e-12
        if any(abs(g - w) > SAMPLE_RTOL * abs(w) + floor for g, w in zip(mine, samples)):
            return f"{what} ({name.split('.', 1)[1]}) differs from the reference's on the same input."
    return ""


def reference_digests(exercise: Exercise, measured: list[Case]) -> dict[str, Digests]:
    """Per measured case, the digests of the reference's outputs and gradients (in this process)."""
    found: dict[str, Digests] = {}
    for case in measured:
        tensors: dict[str, torch.Tensor] = {}
        call = to_call(case, tensors, "cpu")
        records, _ = execute_calls(exercise.reference, [call], tensors, "reference.py")
        # the harness's own record: non-finite values by name (sandbox.harness.wire_float)
        found[case.id] = {
            name: [float(x) for x in values] for name, values in (records[0].get("digests") or {}).items()
        }
    return found


@dataclass
class Visit:
    """What the jail said about one submission, and the reference's work done beside it."""

    #: The learner's regular calls (one visit).
    job: JobResult
    #: The learner's measured cases, each a visit of its own, by case id (none when the job failed).
    measured: dict[str, JobResult]
    #: The reference's expected outcomes on the regular cases (being computed).
    want: Future[dict[str, Outcome]]
    #: The reference's digests of each measured case (empty when the job failed).
    digests: dict[str, Digests]
    #: Seconds the regular visit took, and from then until the measured visits were back.
    jail_seconds: float
    measured_seconds: float


class Pools:
    """The jail pools, executors and trusted-peak cache of one judge. Thread-safe.

    ``device`` is where the learner's calls (and the trusted code measured beside them) run:
    "cpu", or "cuda" on a GPU worker.
    """

    def __init__(self, config: JailConfig, pool_size: int, device: str = "cpu") -> None:
        reuse = config.reuse
        self.config = config
        self.device = device
        self.learners = SandboxPool(pool_size, config)
        # Warm hosts let a submission's measured cases run beside its regular cases, on hosts
        # of their own (a separate pool, so neither kind of visit can starve the other). A
        # fresh interpreter per submission (reuse=False) serves both visits in turn.
        self._measured = SandboxPool(pool_size, config) if reuse else None
        self._visits = ThreadPoolExecutor(max_workers=pool_size, thread_name_prefix="memory-visit") if reuse else None
        self._reference_work = ThreadPoolExecutor(max_workers=2, thread_name_prefix="reference")
        # Started with the others, so the first learner does not wait for it.
        self._trusted: SandboxPool | None = SandboxPool(1, config) if reuse else None
        self._trusted_peaks: dict[tuple[str, str, str, str], JobResult] = {}
        self._lock = threading.Lock()

    def sandbox_pools(self) -> list[SandboxPool]:
        """Every jail pool started so far (the hostile suite's hygiene test tracks their hosts)."""
        return [p for p in (self.learners, self._measured, self._trusted) if p is not None]

    def close(self) -> None:
        """Stop every jail host, then the executors. Hosts first: a visit still running (a
        server stopping with a job in hand) ends with its host at once, instead of holding the
        executors' shutdown up to the wall-clock limit of each of its visits."""
        self.learners.close()
        if self._measured is not None:
            self._measured.close()
        if self._trusted is not None:
            self._trusted.close()
        if self._visits is not None:
            self._visits.shutdown(wait=True)
        self._reference_work.shutdown(wait=True)

    # -- the learner's visits ------------------------------------------------------------------

    def visit(
        self,
        exercise: Exercise,
        source: str,
        regular: list[Case],
        measured: list[Case],
        limits: SandboxLimits | None = None,
    ) -> Visit:
        """The learner's regular calls in one visit, each measured case in one of its own; the
        reference's outcomes and digests are computed meanwhile. ``limits``: the regular visit's,
        when lower than the pool's (the probe visit: what the graded visit left of one job's)."""
        want = self._reference_work.submit(run_in_process, exercise.reference, regular, "reference.py")
        digests_pending = self._reference_work.submit(reference_digests, exercise, measured)
        tensors: dict[str, torch.Tensor] = {}
        calls = [to_call(c, tensors, self.device) for c in regular]
        t_start = time.monotonic()
        with self.learners.session() as box:
            pending = None
            if measured and self._visits is not None and self._measured is not None:
                pending = self._visits.submit(self._measure_learner, self._measured.run, exercise, source, measured)
            job = box.run(JobRequest(source=source, function=exercise.function_name, calls=calls), tensors, limits)
            t_jail = time.monotonic()
            # While the measured visit may still run: what the reference's results digest to on
            # the same inputs, so the measured run is graded and not only measured.
            digests = digests_pending.result() if job.status == JobStatus.OK else {}
            if pending is not None:
                mine = pending.result()
            elif job.status == JobStatus.OK:
                mine = self._measure_learner(box.run, exercise, source, measured)
            else:
                mine = {}
        if job.status != JobStatus.OK:
            want.cancel()
            digests_pending.cancel()
        return Visit(job, mine, want, digests, t_jail - t_start, time.monotonic() - t_jail)

    def _memory_request(
        self, exercise: Exercise, source: str, case: Case
    ) -> tuple[JobRequest, dict[str, torch.Tensor]]:
        """A visit of its own for one measured case: warm-up call first, then the case."""
        tensors: dict[str, torch.Tensor] = {}
        calls = [to_call(case, tensors, self.device)]
        warmup = [to_call(case.warmup, tensors, self.device)] if case.warmup else []
        return JobRequest(source=source, function=exercise.function_name, calls=calls, warmup_calls=warmup), tensors

    def _measure_learner(
        self, run: Callable[..., JobResult], exercise: Exercise, source: str, cases: list[Case]
    ) -> dict[str, JobResult]:
        """The learner's measured cases, each in a child of its own, through ``run``."""
        return {case.id: run(*self._memory_request(exercise, source, case)) for case in cases}

    # -- trusted code's peaks ------------------------------------------------------------------

    def measure_trusted(self, exercise: Exercise, case: Case, name: str, source: str) -> JobResult:
        """Trusted code (the reference, a memory mistake) measured in a host of its own, once per
        shape: peaks depend on shapes, not values."""
        key = (exercise.slug, exercise.folder, name, case.signature())  # two versions: two folders
        with self._lock:
            if key in self._trusted_peaks:
                return self._trusted_peaks[key]
            if self._trusted is None:
                self._trusted = SandboxPool(1, self.config)
            pool = self._trusted
        result = pool.run(*self._memory_request(exercise, source, case))
        if result.status == JobStatus.OK:
            with self._lock:
                self._trusted_peaks[key] = result
        return result

    def readings(self, exercise: Exercise, visit: Visit, measured: list[Case]) -> dict[str, MemoryReading]:
        """Per measured case: the learner's peak (from a run whose results were right) and the reference's."""
        memory: dict[str, MemoryReading] = {}
        for case in measured:
            ref = self.measure_trusted(exercise, case, "reference", exercise.reference_source)
            mine = visit.measured[case.id]
            reading = MemoryReading(
                learner_bytes=mine.peak_memory_bytes if mine.status == JobStatus.OK else None,
                reference_bytes=ref.peak_memory_bytes if ref.status == JobStatus.OK else None,
                source=mine.memory_source,
                learner_status=mine.status.value,
                learner_message=mine.message,
            )
            call = mine.call(case.id)
            if mine.status == JobStatus.OK and (call is None or call.error is not None):
                # A call that raised allocates little: its peak says nothing about the solution.
                reading.learner_bytes = None
                reading.learner_message = (
                    f"your function raised {call.error.type}: {cap(call.error.message, _ERROR_QUOTE)}"
                    if call and call.error
                    else "no result came back"
                )
            elif mine.status == JobStatus.OK and call is not None:
                reading.mismatch = compare_digests(call.digests, visit.digests.get(case.id, {}))
                reading.verified = not reading.mismatch
            memory[case.id] = reading
        return memory

    def name_memory_mistake(self, exercise: Exercise, chk: Check, run: Run) -> Mistake | None:
        """The memory mistake that also fails this check with the peak nearest the learner's.

        Only a measured run whose results were right can be a memory mistake (a wrong answer
        fails this check for its values), and only a peak nearer the mistake's than the
        reference's is named.
        """
        if any(r.verified is False or r.learner_bytes is None for r in run.memory.values()):
            return None
        best: tuple[float, Mistake] | None = None
        for m in (m for m in exercise.mistakes if m.is_memory):
            readings: dict[str, MemoryReading] = {}
            for case in run.cases.values():
                if case.memory and case.id in run.memory:
                    mine = run.memory[case.id]
                    measured = self.measure_trusted(exercise, case, m.key, m.source(exercise.function_name))
                    readings[case.id] = MemoryReading(
                        measured.peak_memory_bytes, mine.reference_bytes, mine.source, measured.status.value
                    )
            learner = [r.learner_bytes for r in run.memory.values() if r.learner_bytes]
            theirs = [r.learner_bytes for r in readings.values() if r.learner_bytes]
            if not learner or not theirs or evaluate_check(chk, run.with_outcomes(run.got, readings))[0]:
                continue
            distance = abs(math.log(max(learner) / max(theirs)))
            references = [r.reference_bytes for r in run.memory.values() if r.reference_bytes]
            to_reference = abs(math.log(max(learner) / max(references))) if references else math.inf
            if distance < min(math.log(4), to_reference) and (best is None or distance < best[0]):
                best = (distance, m)
        return best[1] if best else None
