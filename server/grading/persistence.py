"""State changes of a submission row: claim, store a report, store an internal error,
recover after a crash. Each is one transaction."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import select, text, update
from sqlalchemy.orm import Session

from exercises.feedback import for_learner, rename_in_text
from exercises.versions import UNKNOWN_VERSION
from server.catalog.versions import serving_ref
from server.courses.best_scores import backfill_best_scores, record_verdict
from server.courses.counted import is_attempt, submission_board, submission_counted
from server.grading.sanitize import (
    CHECK_NAME_CHARS,
    MAX_CHECKS,
    MESSAGE_BYTES,
    clean_bytes_count,
    clean_float,
    clean_id,
    clean_optional_text,
    clean_text,
    clean_timings,
)
from server.models import CheckResult, Status, Submission, Verdict, utcnow

# A submission that has taken down this many workers is not tried again (poison pill).
MAX_ATTEMPTS = 3

INTERNAL_ERROR_MESSAGE = (
    "The grader failed on its side while grading this submission. This is not your "
    "fault and does not count against you; please submit again later."
)

#: The PostgreSQL notification channel of stored verdicts; the payload is the submission id
#: (each API process's ``submissions.waiting.VerdictListener`` listens on it).
CHANNEL = "ppo_grader_verdicts"


class CheckLike(Protocol):
    """The fields of the judge's ``CheckOutcome`` that we store (read-only, so any report type fits)."""

    @property
    def name(self) -> str: ...
    @property
    def weight(self) -> float: ...
    @property
    def passed(self) -> bool: ...
    @property
    def message(self) -> str: ...
    @property
    def misconception(self) -> str | None: ...

    # Optional, read with getattr: ``check_id``, ``mistake_id`` and ``self_reported``, absent
    # from older reports (a check without them is stored as not confirmed: storable()).


class ReportLike(Protocol):
    """The fields of the judge's ``GradeReport`` that we store."""

    @property
    def verdict(self) -> str: ...
    @property
    def score(self) -> float | None: ...
    @property
    def message(self) -> str: ...
    @property
    def checks(self) -> Sequence[CheckLike]: ...
    @property
    def stdout(self) -> str: ...
    @property
    def stderr(self) -> str: ...
    @property
    def timings(self) -> Mapping[str, float]: ...
    @property
    def peak_memory_bytes(self) -> int | None: ...
    @property
    def cpu_seconds(self) -> float | None: ...

    # Optional, read with getattr: ``feedback`` (exercises/feedback.py) and ``diagnosis``
    # (the judge's named mistakes), absent from older reports.


@dataclass(frozen=True)
class Claimed:
    """What a worker needs to grade a row it now owns."""

    id: int
    exercise: str
    source: str
    attempts: int
    created_at: datetime
    started_at: datetime
    #: What to grade with: the slug, or slug@version of the stored version the course's set
    #: serves, read at the claim (a publish reaches running workers: server.catalog.versions).
    ref: str = ""


def claim(session: Session, submission_id: int) -> Claimed | None:
    """Atomically move one row from ``queued`` to ``running``; None if someone else has it.

    A compare-and-set by id (``UPDATE ... WHERE id = :id AND status = 'queued'``) works the
    same on SQLite and PostgreSQL, and two workers can never both win.
    """
    return _claim(session, submission_id, [Status.QUEUED])


def claim_job(session: Session, submission_id: int) -> Claimed | None:
    """Claim a row for a job that a queue may deliver again (procrastinate).

    Unlike ``claim``, a row left ``running`` is taken too: the queue redelivers a job only
    after its worker was declared dead (no heartbeat), so the earlier attempt is over.
    ``attempts`` counts every claim, which bounds a job that keeps killing its workers.
    Returns None when the row is already ``done`` (a duplicate delivery) or missing.
    """
    return _claim(session, submission_id, [Status.QUEUED, Status.RUNNING])


def _claim(session: Session, submission_id: int, from_statuses: list[Status]) -> Claimed | None:
    started = utcnow()
    result = session.execute(
        update(Submission)
        .where(Submission.id == submission_id, Submission.status.in_(from_statuses))
        .values(status=Status.RUNNING, attempts=Submission.attempts + 1, started_at=started)
        .execution_options(synchronize_session=False)
    )
    if result.rowcount != 1:  # type: ignore[attr-defined]
        return None
    row = session.execute(
        select(
            Submission.exercise, Submission.source, Submission.attempts, Submission.created_at, Submission.course_id
        ).where(Submission.id == submission_id)
    ).one()
    ref = serving_ref(session, row.course_id, row.exercise)
    return Claimed(submission_id, row.exercise, row.source, row.attempts, row.created_at, started, ref)


@dataclass(frozen=True)
class Storable:
    """A judge's report made storable: every field the learner's run could influence is
    bounded and cleaned (server.grading.sanitize). The judge caps too, but storage must not
    depend on it. Checks are plain dicts with ``CheckResult``'s columns (a regrade result keeps
    them as JSON until it is applied)."""

    verdict: Verdict
    score: float | None
    message: str
    checks: list[dict[str, Any]]
    feedback: Any
    stdout: str
    stderr: str
    timings: dict[str, Any]
    peak_memory_bytes: int | None
    cpu_seconds: float | None


def storable(
    report: ReportLike, filename: str | None, *, output_cap: int, extra_timings: Mapping[str, float] | None = None
) -> Storable:
    """Clean a report for storage; ``filename`` (the learner's) replaces the jail's in messages.

    Raises ``ValueError`` on a verdict outside the closed list.
    """
    verdict = Verdict(report.verdict)
    checks = list(report.checks[: MAX_CHECKS + 1])
    rows = [
        {
            "name": clean_text(check.name, CHECK_NAME_CHARS)[:CHECK_NAME_CHARS],
            "check_id": clean_id(getattr(check, "check_id", None)),
            "weight": clean_float(check.weight) or 0.0,
            "passed": bool(check.passed),
            "message": _storable_message(check.message, filename),
            "misconception": clean_optional_text(check.misconception, MESSAGE_BYTES),
            "mistake_id": clean_id(getattr(check, "mistake_id", None)),
            "self_reported": _self_reported(check),
        }
        for check in checks[:MAX_CHECKS]
    ]
    message = _storable_message(report.message, filename)
    if len(checks) > MAX_CHECKS:
        message += f"\n[only the first {MAX_CHECKS} checks are stored]"
    return Storable(
        verdict=verdict,
        score=None if report.score is None else clean_float(report.score),
        message=message,
        checks=rows,
        feedback=_clean_json(
            for_learner(getattr(report, "feedback", None), filename, getattr(report, "diagnosis", None))
        ),
        stdout=clean_text(report.stdout, output_cap),
        stderr=clean_text(report.stderr, output_cap),
        timings=clean_timings(report.timings, extra_timings),
        peak_memory_bytes=clean_bytes_count(report.peak_memory_bytes),
        cpu_seconds=clean_float(report.cpu_seconds, minimum=0.0),
    )


def _self_reported(check: CheckLike) -> bool:
    """The judge's word on one check, as stored: confirmed (False) only when the judge names
    no self-reported fact for it (``CheckOutcome.self_reported == ""``) and it has an id; a
    check without the field, or without an id, is not confirmed."""
    fact = getattr(check, "self_reported", None)
    return not (isinstance(fact, str) and fact == "" and clean_id(getattr(check, "check_id", None)))


def check_results(rows: Sequence[Mapping[str, Any]]) -> list[CheckResult]:
    """``CheckResult`` rows, in order, from cleaned check dicts (``Storable.checks``)."""
    return [CheckResult(position=position, **row) for position, row in enumerate(rows)]


def store_report(
    session: Session,
    submission_id: int,
    report: ReportLike,
    *,
    output_cap: int,
    extra_timings: Mapping[str, float] | None = None,
    attempt: int | None = None,
    versions: tuple[str, str] = (UNKNOWN_VERSION, UNKNOWN_VERSION),
) -> bool:
    """Store the verdict, score, checks, measurements and ``versions`` (content, grader) and
    mark the row ``done``.

    Returns False (and stores nothing) if the row is no longer ``running`` in our hands,
    e.g. a restart re-queued it meanwhile, or (with ``attempt``) a later claim of the same
    row has replaced ours: ``attempt`` is a fencing token, so a worker wrongly declared dead
    cannot overwrite the result of the worker that took over. Raises ``ValueError`` on a verdict outside the
    closed list, so the caller can record an internal error instead.
    """
    Verdict(report.verdict)
    # FOR UPDATE on PostgreSQL (ignored by SQLite, whose writers are serialised anyway).
    submission = session.get(Submission, submission_id, with_for_update=True)
    if submission is None or submission.status != Status.RUNNING:
        return False
    if attempt is not None and submission.attempts != attempt:
        return False
    previous = submission.verdict
    clean = storable(report, submission.filename, output_cap=output_cap, extra_timings=extra_timings)
    submission.checks.clear()  # a re-graded row (after a crash) must not keep old results
    session.flush()
    submission.checks.extend(check_results(clean.checks))
    submission.verdict = clean.verdict.value
    submission.score = clean.score
    # The late policy's penalty was fixed when the submission was accepted; the raw score stays.
    submission.counted_score = (
        submission_counted(clean.score, submission.penalty_percent) if clean.verdict is Verdict.GRADED else None
    )
    # The boards rank by the checks the judge confirmed, as stored on the rows (submission_board).
    submission.board_score = (
        submission_board(clean.checks, submission.penalty_percent) if clean.verdict is Verdict.GRADED else None
    )
    submission.message = clean.message
    submission.feedback = clean.feedback
    submission.stdout = clean.stdout
    submission.stderr = clean.stderr
    submission.timings = clean.timings
    submission.peak_memory_bytes = clean.peak_memory_bytes
    submission.cpu_seconds = clean.cpu_seconds
    submission.content_version, submission.grader_version = versions
    submission.status = Status.DONE
    submission.finished_at = utcnow()
    _count(session, submission, previous)
    notify_verdict(session, submission_id)
    return True


def notify_verdict(session: Session, submission_id: int) -> None:
    """Tell every API process, at this transaction's commit, that ``submission_id`` is done.

    PostgreSQL only (``pg_notify`` is transactional: a rolled-back verdict notifies nobody);
    elsewhere the in-process announcement and polling do the work.
    """
    if session.get_bind().dialect.name == "postgresql":
        session.execute(
            text("SELECT pg_notify(:channel, :payload)"), {"channel": CHANNEL, "payload": str(submission_id)}
        )


def _storable_message(text: object, filename: str | None) -> str:
    """Cleaned and capped first (work bounded by the cap, whatever came in), then the learner's
    file name in place of the jail's ``submission.py``: a name of at most 100 characters adds
    a bounded few bytes per traceback frame kept."""
    return rename_in_text(clean_text(text, MESSAGE_BYTES), filename)


def _clean_json(value: Any) -> Any:
    """The feedback data with every string storable (capped, no NUL, no lone surrogate);
    exercises/feedback.py caps list lengths already."""
    if isinstance(value, str):
        return clean_text(value, MESSAGE_BYTES)
    if isinstance(value, dict):
        return {clean_text(k, CHECK_NAME_CHARS): _clean_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean_json(v) for v in value]
    return value


def _count(session: Session, submission: Submission, previous: str | None) -> None:
    """Bring ``best_scores`` up to date with this row's new verdict, in this transaction.

    The normal case (a first verdict) is one upsert. A row that already carried a counted
    verdict (a finished row overwritten, which the fencing makes rare) is re-counted from
    its submissions instead, since an upsert cannot take a verdict back.
    """
    if is_attempt(previous):  # it counted already: an upsert cannot take it back
        session.flush()
        backfill_best_scores(session, submission.course_id, submission.user_id, submission.exercise)
        return
    record_verdict(
        session,
        course_id=submission.course_id,
        user_id=submission.user_id,
        exercise=submission.exercise,
        submission_id=submission.id,
        created_at=submission.created_at,
        verdict=submission.verdict or "",
        score=submission.score,
        counted_score=submission.counted_score,
        board_score=submission.board_score,
    )


def store_internal_error(
    session: Session,
    submission_id: int,
    message: str = INTERNAL_ERROR_MESSAGE,
    *,
    attempt: int | None = None,
) -> None:
    """Finish a row with verdict ``internal_error``: the grader's fault, never counted."""
    submission = session.get(Submission, submission_id, with_for_update=True)
    if submission is None or (attempt is not None and submission.attempts != attempt):
        return
    previous = submission.verdict
    submission.checks.clear()
    submission.feedback = None
    submission.verdict = Verdict.INTERNAL_ERROR.value
    submission.score = None
    submission.counted_score = None
    submission.board_score = None
    submission.message = clean_text(message, MESSAGE_BYTES)
    submission.status = Status.DONE
    submission.finished_at = utcnow()
    _count(session, submission, previous)  # not an attempt: changes nothing unless it undoes one
    notify_verdict(session, submission_id)


def requeue_unfinished(session: Session) -> list[tuple[int, int]]:
    """After a crash or restart: rows left ``running`` go back to ``queued``.

    Returns every ``queued`` (id, learner's user id), oldest first, for the caller to enqueue
    (none is lost).
    """
    session.execute(
        update(Submission)
        .where(Submission.status == Status.RUNNING)
        .values(status=Status.QUEUED, started_at=None)
        .execution_options(synchronize_session=False)
    )
    rows = session.execute(
        select(Submission.id, Submission.user_id).where(Submission.status == Status.QUEUED).order_by(Submission.id)
    )
    return [(int(row_id), int(user_id)) for row_id, user_id in rows.tuples()]


def return_to_queue(session: Session, submission_ids: list[int]) -> list[int]:
    """A clean shutdown gave up on these rows while they were grading: back to ``queued``,
    the interrupted attempt not counted (it was no fault of the job's, and must not bring it
    nearer ``MAX_ATTEMPTS``). Rows no longer ``running`` (stored meanwhile) are left alone.
    Returns the ids returned."""
    if not submission_ids:
        return []
    returned = session.scalars(
        update(Submission)
        .where(Submission.id.in_(submission_ids), Submission.status == Status.RUNNING)
        .values(status=Status.QUEUED, started_at=None, attempts=Submission.attempts - 1)
        .returning(Submission.id)
        .execution_options(synchronize_session=False)
    )
    return sorted(int(i) for i in returned)
