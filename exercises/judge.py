"""The trusted judge: build the cases, visit the jail, measure, evaluate, report.

``Judge.grade(slug, source, seed)`` builds the exercise's cases from a seed mixed with the
server secret, sends only the inputs and the learner's source to the jail while the hidden
reference computes the expected outcomes *in this process* (:mod:`exercises.measurement`),
reads the measured cases' peaks, evaluates each weighted check and names the mistakes behind
the failures (:mod:`exercises.scoring`), and returns a :class:`~exercises.report.GradeReport`.

The mistakes are named from a fixed diagnostic probe set (:func:`probe_seed`): the exercise's
cases built from a seed that mixes the server secret with the exercise's content version, not
with the grading seed. When a check fails, the probe cases go to the jail in a visit of their
own (after the graded visit, which is exactly what it was without probes, so no score can
move), their outcomes come back through the same decoder, the reference computes the expected
ones here, and diagnosis names what the probes show (:class:`exercises.scoring.Probes`), each name checked
against the graded run's own outputs (:func:`exercises.scoring.on_failed`: a file can recognise the
fixed probe inputs, so the probe visit alone is never believed).

The probe visit spends what the graded visit left of one job's wall and CPU limits
(:func:`probe_limits`), and is not made when too little is left (diagnosis then looks at the graded
run itself): one grading holds a worker for about one wall limit plus set-up, however the file
spends its time.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Sequence
from dataclasses import replace

import torch

from exercises import feedback
from exercises.framework import Case, CaseGen, Exercise, Run
from exercises.measurement import Pools, Visit
from exercises.outcomes import outcomes_from
from exercises.registry import get_exercise
from exercises.report import MESSAGE_CAP, OUTPUT_CAP, GradeReport
from exercises.scoring import Evaluation, Probes, evaluate
from exercises.versions import content_version
from sandbox.protocol import JobResult, JobStatus, SandboxLimits
from sandbox.runner import JailConfig
from sandbox.text import cap


def mix_seed(secret: bytes, slug: str, seed: int | str) -> int:
    """A case seed that a learner cannot predict without the server secret."""
    digest = hmac.new(secret, f"{slug}:{seed}".encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") & ((1 << 63) - 1)


def probe_seed(secret: bytes, exercise: Exercise) -> int:
    """The case seed of an exercise's diagnostic probe set: fixed per exercise version and server
    secret (a learner cannot predict it), the same whatever seed the submission is graded on."""
    return mix_seed(secret, exercise.slug, f"diagnostic-probes@{content_version(exercise)}")


#: The least share of a job's wall and CPU limits a probe visit is made with: with less left
#: after the graded visit, there is no probe visit and the graded run's own diagnosis is given.
PROBE_MIN_SHARE = 0.25


def probe_limits(limits: SandboxLimits, graded: JobResult) -> SandboxLimits | None:
    """The probe visit's limits: ``limits`` with the wall and CPU time the ``graded`` visit's job
    spent taken off (a figure it lacks counts as all of it); None when less than
    :data:`PROBE_MIN_SHARE` of either limit is left (no probe visit). The two visits of one
    grading so spend at most one job's wall and CPU limits together."""
    wall = limits.wall_seconds - (graded.wall_seconds if graded.wall_seconds is not None else limits.wall_seconds)
    cpu = limits.cpu_seconds - (graded.cpu_seconds if graded.cpu_seconds is not None else limits.cpu_seconds)
    if wall < PROBE_MIN_SHARE * limits.wall_seconds or cpu < PROBE_MIN_SHARE * limits.cpu_seconds:
        return None
    return replace(limits, wall_seconds=wall, cpu_seconds=cpu)


class Judge:
    """Grades submissions. Thread-safe; owns the jail pools (:class:`~exercises.measurement.Pools`).

    ``device`` is "cpu" or "cuda": on a GPU worker the learner's calls run on CUDA tensors
    (expected values are still computed on the CPU by the reference).
    """

    def __init__(
        self,
        secret: bytes,
        limits: SandboxLimits | None = None,
        pool_size: int = 1,
        device: str = "cpu",
        *,
        jailed: bool = True,
        reuse: bool = True,
    ) -> None:
        self.secret = secret
        self.device = device
        # The judge's own tensors (cases, the reference, diagnosis runs) are tiny: one thread
        # avoids intra-op thread hand-offs that cost milliseconds per op on a loaded machine.
        torch.set_num_threads(1)
        config = JailConfig(limits=limits or SandboxLimits(), jailed=jailed, reuse=reuse, gpu=device == "cuda")
        self.limits = config.limits
        self.pools = Pools(config, pool_size, device)

    def close(self) -> None:
        self.pools.close()

    def grade(self, slug: str, source: str, seed: int | str) -> GradeReport:
        """Grade ``source`` for exercise ``slug`` (or ``slug@version``,
        :func:`exercises.versions.exercise_ref`); never raises for anything the learner did."""
        t0 = time.monotonic()
        exercise = get_exercise(slug)  # a slug, or slug@version: the stored version a set serves
        cases = exercise.build_cases(CaseGen(mix_seed(self.secret, exercise.slug, seed), self.device))
        regular = [c for c in cases if not c.memory]
        measured = [c for c in cases if c.memory]
        t_built = time.monotonic()
        visit = self.pools.visit(exercise, source, regular, measured)
        if visit.job.status != JobStatus.OK:
            return _failed(exercise, source, visit, {"build_cases": t_built - t0}, t0)
        run = Run(
            {c.id: c for c in cases},
            outcomes_from(visit.job.calls, visit.job.tensors),
            visit.want.result(),
            self.pools.readings(exercise, visit, measured),
            self.device,
        )
        t_measured = time.monotonic()
        probes = self._probes(exercise, source, visit.job)
        evaluation = evaluate(exercise, run, self.pools.name_memory_mistake, probes)
        t_end = time.monotonic()
        timings = {
            "build_cases": t_built - t0,
            "learner_jail": visit.jail_seconds,
            "memory_cases": t_measured - t_built - visit.jail_seconds,
            "checks": t_end - t_measured,
            "diagnosis": evaluation.diagnosis_seconds,
            **({"probe_visit": probes.seconds} if probes.made else {}),
            "total": t_end - t0,
        }
        if evaluation.diagnosis_skipped is not None:
            timings["diagnosis_skipped"] = 1.0  # the check messages say so too
        return _graded(exercise, source, visit, run, evaluation, measured, timings)

    def grade_seeds(self, slug: str, source: str, seeds: Sequence[int | str]) -> list[GradeReport]:
        """Grade ``source`` on each of ``seeds`` (a report per seed, in order) in one jail visit.

        For seed-stability sweeps, where a correct file must score 100 on every seed: the
        regular cases of every seed go to the jail together (their ids prefixed ``s<i>-``, so
        a detach probe's weights differ from :meth:`grade`'s, never the inputs), instead of a
        fork and a load per seed. The measured cases (peak memory: their shapes are fixed and
        their values do not matter) are visited for the first seed only, and its readings
        serve every seed. Keep the batch to a few seeds: the visit's limits cover all of them.
        """
        t0 = time.monotonic()
        exercise = get_exercise(slug)
        per_seed = [
            exercise.build_cases(CaseGen(mix_seed(self.secret, exercise.slug, seed), self.device)) for seed in seeds
        ]
        measured = [c for c in per_seed[0] if c.memory]
        regular = [replace(c, id=f"s{i}-{c.id}") for i, cases in enumerate(per_seed) for c in cases if not c.memory]
        visit = self.pools.visit(exercise, source, regular, measured)
        if visit.job.status != JobStatus.OK:
            return [_failed(exercise, source, visit, {}, t0) for _ in seeds]
        got, want = outcomes_from(visit.job.calls, visit.job.tensors), visit.want.result()
        memory = self.pools.readings(exercise, visit, measured)
        reports = []
        probes = self._probes(exercise, source, visit.job)  # one probe visit and diagnosis for every seed
        for i, cases in enumerate(per_seed):
            ids = [c.id for c in cases if not c.memory]
            run = Run(
                {c.id: c for c in cases},
                {k: got[f"s{i}-{k}"] for k in ids if f"s{i}-{k}" in got},
                {k: want[f"s{i}-{k}"] for k in ids},
                memory,
                self.device,
            )
            evaluation = evaluate(exercise, run, self.pools.name_memory_mistake, probes)
            timings = {
                "build_cases": 0.0,
                "learner_jail": visit.jail_seconds,
                "memory_cases": 0.0,
                "checks": 0.0,
                "diagnosis": evaluation.diagnosis_seconds,
                "total": time.monotonic() - t0,
            }
            reports.append(_graded(exercise, source, visit, run, evaluation, measured, timings))
        return reports

    def _probes(self, exercise: Exercise, source: str, graded: JobResult) -> _JudgeProbes:
        """The submission's diagnostic probes, visited only if diagnosis asks for them, within
        what the ``graded`` visit's job left of the limits (:func:`probe_limits`)."""
        return _JudgeProbes(self, exercise, source, probe_limits(self.limits, graded))

    def probe_run(self, exercise: Exercise, source: str, limits: SandboxLimits | None = None) -> Run | str:
        """The learner's outcomes on the exercise's diagnostic probe set (:func:`probe_seed`), in a
        jail visit of their regular cases alone (under ``limits``, no higher than the judge's);
        or why none came back (the visit's status)."""
        cases = exercise.build_cases(CaseGen(probe_seed(self.secret, exercise), self.device))
        regular = [c for c in cases if not c.memory]
        visit = self.pools.visit(exercise, source, regular, [], limits=limits)
        if visit.job.status != JobStatus.OK:
            return visit.job.status.value
        return Run(
            {c.id: c for c in cases},  # as the graded run's: measured cases listed, not visited
            outcomes_from(visit.job.calls, visit.job.tensors),
            visit.want.result(),
            {},
            self.device,
        )


class _JudgeProbes(Probes):
    """:class:`~exercises.scoring.Probes` made by a judge's jail visit under ``limits``, timed;
    none made when ``limits`` is None (too little of the job's limits left)."""

    def __init__(self, judge: Judge, exercise: Exercise, source: str, limits: SandboxLimits | None) -> None:
        super().__init__(self._visit)
        self._judge, self._exercise, self._source, self._limits = judge, exercise, source, limits
        self.made = False
        self.seconds = 0.0

    def _visit(self) -> Run | str | None:
        if self._limits is None:
            return None
        t0 = time.monotonic()
        try:
            return self._judge.probe_run(self._exercise, self._source, self._limits)
        finally:
            self.made = True
            self.seconds = time.monotonic() - t0


def _report(visit: Visit) -> GradeReport:
    """A report with what the jail measured of the regular visit."""
    job = visit.job
    return GradeReport(
        verdict="graded",
        score=None,
        message="",
        stdout=cap(job.stdout, OUTPUT_CAP),
        stderr=cap(job.stderr, OUTPUT_CAP),
        peak_memory_bytes=job.peak_memory_bytes,
        cpu_seconds=job.cpu_seconds,
        line=job.line,
    )


def _failed(exercise: Exercise, source: str, visit: Visit, timings: dict[str, float], t0: float) -> GradeReport:
    """The report of a visit that did not end well: no check ran."""
    job = visit.job
    report = _report(visit)
    report.verdict = job.status.value
    report.score = None if job.status == JobStatus.INTERNAL_ERROR else 0.0
    report.message = cap(_message_for(job, exercise), MESSAGE_CAP)
    report.timings = {**timings, **{f"jail_{k}": v for k, v in job.timings.items()}, "total": time.monotonic() - t0}
    feedback.attach(report, source, None, exercise.function_name, import_error=job.import_error)
    return report


def _graded(
    exercise: Exercise,
    source: str,
    visit: Visit,
    run: Run,
    evaluation: Evaluation,
    measured: list[Case],
    timings: dict[str, float],
) -> GradeReport:
    """The report of a graded run: checks, score, diagnosis, and speed from a verified measured run."""
    report = _report(visit)
    if measured:
        # Speed and memory figures come from a verified measured run, or there are none.
        report.cpu_seconds = report.peak_memory_bytes = None
    for case in measured:
        mine = visit.measured[case.id]
        if run.memory[case.id].verified and mine.cpu_seconds is not None:
            # The measured case is the speed figure, taken only from a run whose results were right.
            report.cpu_seconds = mine.cpu_seconds
            report.peak_memory_bytes = mine.peak_memory_bytes
    report.checks, report.diagnosis = evaluation.checks, evaluation.diagnosis
    report.score, report.message = evaluation.score, evaluation.message
    report.timings = {
        "build_cases": timings["build_cases"],
        **{f"jail_{k}": v for k, v in visit.job.timings.items()},
        **timings,
    }
    feedback.attach(report, source, run.got, exercise.function_name)
    return report


def _message_for(job: JobResult, exercise: Exercise) -> str:
    if job.status == JobStatus.MISSING_FUNCTION:
        return (
            f"Your file does not define a function named {exercise.function_name}() "
            f"({job.message}). Check the name and the signature against the exercise."
        )
    return job.message
