"""Submission rules: validation, idempotent creation, who may read what, queue position."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from exercises.feedback import safe_filename
from server.catalogue.service import catalogue_version, find_exercise, visible_exercises
from server.catalogue.versions import UNVERIFIED, serving_version
from server.courses.feedback_policy import AccessMemo, access_for, visible_report
from server.courses.policy import Phase
from server.courses.service import course_for_submission, courses_of, taught_course_ids, teaches_course
from server.courses.sets import accept, released_exercises
from server.courses.windows import exercise_window
from server.errors import (
    CatalogueChanged,
    EmptySource,
    ExerciseNotVerified,
    GraderError,
    IdempotencyKeyConflict,
    InvalidSource,
    LateNotConfirmed,
    NotAllowed,
    SourceTooLarge,
    SubmissionNotFound,
    TooManyQueued,
)
from server.grading.queue import SubmissionQueue
from server.models import Course, Role, Status, Submission, User, utcnow
from server.regrades.notes import regrade_notes
from server.submissions.limits import refuse_if_queue_full
from server.submissions.schemas import (
    CheckPublic,
    Feedback,
    SubmissionCreate,
    SubmissionPublic,
    SubmissionSummary,
)
from server.users.service import lock_learner

#: A UTF-8 byte-order mark, as a decoded text starts with it (Notepad, VS Code's "UTF-8 with BOM").
BYTE_ORDER_MARK = "\ufeff"


def validate_source(source: str, max_bytes: int) -> bytes:
    """Return the UTF-8 bytes of an acceptable source, or raise the matching error."""
    try:
        data = source.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates smuggled in through JSON escapes
        raise InvalidSource("The source is not valid UTF-8 text.") from None
    if len(data) > max_bytes:
        raise SourceTooLarge(
            f"The source is {len(data)} bytes; the limit is {max_bytes} bytes ({max_bytes // 1024} KiB)."
        )
    if "\x00" in source:
        raise InvalidSource("The source contains NUL bytes; send a plain Python text file.")
    if not source.strip():
        raise EmptySource("The source is empty.")
    return data


def create_submission(
    session: Session,
    queue: SubmissionQueue,
    user: User,
    payload: SubmissionCreate,
    *,
    max_source_bytes: int,
    idempotency_key: str | None,
    max_queued: int | None,
    retry_after: int = 0,
    now: datetime | None = None,
    ask_if_late: bool = False,
    catalogue: str | None = None,
) -> tuple[Submission, bool]:
    """Store a ``queued`` row (and, for procrastinate, its job) in one transaction, commit,
    then hand its id to an in-process queue. Returns (row, created).

    With an idempotency key already used by this user, returns the earlier row and
    ``created=False`` instead of adding a second one. A learner with ``max_queued``
    submissions waiting gets ``TooManyQueued``; the count and the insert are one
    transaction under the learner's lock, so concurrent requests cannot both pass it.
    ``max_queued=None`` (trusted callers such as fixtures loading many rows) sets no cap.
    Otherwise the course's rules at ``now`` (default: the system clock) decide
    (``server.courses.sets.accept``): refused before the release, after the close or past
    the attempt limit (counted under the learner's lock, so a burst cannot overrun it), or
    accepted with its lateness and penalty fixed.

    ``catalogue`` (the version the client matched its file in, ``GET /exercises``' ``ETag``)
    that is not the caller's catalogue now is ``CatalogueChanged``; with ``ask_if_late``, a
    submission whose window (as ``GET /courses/{course}/exercises`` lists it) is ``late`` is
    ``LateNotConfirmed``, carrying that window. Neither stores anything.
    """
    # Every route's source enters here: a file saved with a byte-order mark runs under python
    # (it reads the file's bytes) but its text does not compile, so it is stored, digested and
    # graded without the mark (review 7).
    source = payload.source.removeprefix(BYTE_ORDER_MARK)
    data = validate_source(source, max_source_bytes)
    visible = released_exercises(session, user, now or utcnow())
    if catalogue is not None and catalogue.strip('"') != catalogue_version(visible_exercises(visible)):
        raise CatalogueChanged(
            "The exercise was matched in a catalogue that has changed since; read `GET /api/v1/exercises` again."
        )
    # a learner's "did you mean" names only what is released to them (review 4, finding 14)
    find_exercise(payload.exercise, visible)
    digest = hashlib.sha256(data).hexdigest()

    if not Role(user.role).submissions_limited:
        max_queued = None  # instructors and admins are not capped
    if max_queued is not None:
        lock_learner(session, user.id)
    if idempotency_key is not None:
        existing = _by_idempotency_key(session, user.id, idempotency_key)
        if existing is not None:
            session.commit()  # nothing to write: release the learner's lock now
            return _check_replay(existing, payload.exercise, digest), False
    if max_queued is not None:
        try:
            refuse_if_queue_full(session, user, max_queued, retry_after=retry_after)
        except TooManyQueued:
            session.rollback()  # release the learner's lock before the 429 is written
            raise

    now = now or utcnow()
    try:
        course = course_for_submission(session, user, payload.course)
        if ask_if_late and (payload.course is not None or _only_course(session, user)):
            _refuse_unconfirmed_late(session, course, user, payload.exercise, now)
        acceptance = accept(session, course, user, payload.exercise, now)
        if serving_version(session, course.id, payload.exercise) == UNVERIFIED:
            raise ExerciseNotVerified(
                f"{payload.exercise!r} has no verified version on this service yet, so it cannot be graded; "
                "your instructor has been told (the service's log names it)."
            )
    except GraderError:
        session.rollback()  # release the learner's lock before the refusal is written
        raise
    submission = Submission(
        user_id=user.id,
        course_id=course.id,
        late_seconds=acceptance.late_seconds,
        penalty_percent=acceptance.penalty_percent,
        feedback_policy=acceptance.feedback_policy,
        feedback_due_at=acceptance.feedback_due_at,
        created_at=now,
        exercise=payload.exercise,
        filename=safe_filename(payload.filename),
        source=source,
        source_sha256=digest,
        status=Status.QUEUED.value,
        idempotency_key=idempotency_key,
    )
    session.add(submission)
    try:
        session.flush()  # assigns the id
        # Same transaction: a queue that stores jobs in the database (procrastinate)
        # writes the job row now, so the submission and its job commit together.
        queue.defer(session, submission)
        session.commit()
    except IntegrityError:
        # A concurrent request with the same key won the insert; answer with its row.
        session.rollback()
        existing = _by_idempotency_key(session, user.id, idempotency_key) if idempotency_key else None
        if existing is None:
            raise
        return _check_replay(existing, payload.exercise, digest), False
    # Only after the commit: a worker must never see an id whose row is not visible yet
    # (a no-op for queues that deferred above).
    queue.enqueue(submission.id, submission.user_id)  # the learner: queues keep their share fair
    return submission, True


def _only_course(session: Session, user: User) -> bool:
    """Whether a submission naming no course goes to the user's only one: always for a learner
    (else ``CourseRequired``); for staff, who are in the default course too, only when it is
    their one course. ``ppo-submit`` asked before a late submission only then, or when the
    course was named: the question stays where it was."""
    return not Role(user.role).reads_everything or len(courses_of(session, user)) == 1


def _refuse_unconfirmed_late(session: Session, course: Course, user: User, exercise: str, now: datetime) -> None:
    """``LateNotConfirmed`` when the exercise's window in ``course`` is ``late`` for ``user``:
    the same window, and so the same question, as ``ppo-submit`` asked from the course listing."""
    found = exercise_window(session, course, user, exercise, now)
    if found is not None and found.status is Phase.LATE:
        raise LateNotConfirmed(
            f"{exercise!r} is past its due date in {course.slug!r}; nothing was stored. "
            "Send it again with `late=send` to submit it late.",
            course.slug,
            found.model_dump(mode="json"),
        )


def _by_idempotency_key(session: Session, user_id: int, key: str) -> Submission | None:
    return session.scalar(select(Submission).where(Submission.user_id == user_id, Submission.idempotency_key == key))


def _check_replay(existing: Submission, exercise: str, digest: str) -> Submission:
    # A retry must carry the same body; a different one under the same key is a client bug
    # that would otherwise silently return the wrong submission.
    if existing.exercise != exercise or existing.source_sha256 != digest:
        raise IdempotencyKeyConflict("This Idempotency-Key was already used for a different submission; use a new key.")
    return existing


def get_submission(session: Session, reader: User, submission_id: int) -> Submission:
    """A submission the reader may see. Others' rows answer 404, not 403, so that a
    learner cannot probe which ids exist."""
    submission = session.get(Submission, submission_id)
    if submission is None or (
        submission.user_id != reader.id and not teaches_course(session, reader, submission.course_id)
    ):
        raise SubmissionNotFound(f"No submission {submission_id} that you can read.")
    return submission


def _late_fields(session: Session, submission: Submission) -> dict[str, object]:
    course = session.get(Course, submission.course_id)
    return {
        "course": course.slug if course else "",
        "late": submission.late_seconds is not None,
        "late_seconds": submission.late_seconds,
        "penalty_percent": submission.penalty_percent or 0.0,
        "counted_score": submission.counted_score,
    }


def queue_position(session: Session, submission: Submission) -> int | None:
    """How many queued submissions are ahead of this one (FIFO by id); None unless queued."""
    if submission.status != Status.QUEUED:
        return None
    return session.scalar(
        select(func.count())
        .select_from(Submission)
        .where(Submission.status == Status.QUEUED, Submission.id < submission.id)
    )


#: The queue's rate is measured over the verdicts stored in the last this many seconds ...
RATE_WINDOW_SECONDS = 300.0
#: ... among the newest this many finished rows (one backward scan of ``(status, id)``: the
#: measurement costs the same however many rows are finished).
RATE_SAMPLE = 200
#: Fewer verdicts than this in the window are no measurement: no estimate is given.
MIN_RATE_VERDICTS = 3


def measured_rate(finished: Iterable[datetime], now: datetime) -> float | None:
    """Verdicts per second over the window: of the ``n`` verdicts finished in the last
    :data:`RATE_WINDOW_SECONDS`, the ``n - 1`` after the oldest, over the time from it to
    ``now``. Measuring to ``now`` (not to the newest verdict) lowers the rate while the workers
    are stalled, so a stalled queue does not keep promising its old speed. None with fewer than
    :data:`MIN_RATE_VERDICTS` recent verdicts: no measurement, and no number made up."""
    cutoff = now - timedelta(seconds=RATE_WINDOW_SECONDS)
    recent = [moment for moment in finished if cutoff <= moment <= now]
    if len(recent) < MIN_RATE_VERDICTS:
        return None
    span = (now - min(recent)).total_seconds()
    return (len(recent) - 1) / span if span > 0 else None


def verdict_rate(session: Session, now: datetime) -> float | None:
    """The whole queue's recent verdict rate (:func:`measured_rate`) from the database, so
    verdicts stored by every worker process count: one bounded, indexed query."""
    finished = session.scalars(
        select(Submission.finished_at)
        .where(Submission.status == Status.DONE)
        .order_by(Submission.id.desc())
        .limit(RATE_SAMPLE)
    )
    return measured_rate((moment for moment in finished if moment is not None), now)


def estimated_seconds(ahead: int, rate: float | None) -> int | None:
    """Seconds until a queued submission's verdict at ``rate``: the ``ahead`` submissions before
    it and itself, rounded up; None without a measured rate."""
    if rate is None or rate <= 0:
        return None
    return math.ceil(round((ahead + 1) / rate, 6))  # 3 / 0.3 is 10.000000000000002: 10 s, not 11


def visible_to(session: Session, viewer: User, submission: Submission, now: datetime) -> SubmissionPublic:
    """The wire form of one submission as ``viewer`` may see it at ``now``: the exercise set's
    feedback policy applied (``server.courses.feedback_policy``)."""
    return visible_report(to_public(session, submission), access_for(session, viewer, submission, now))


def to_public(session: Session, submission: Submission) -> SubmissionPublic:
    """The wire form of one submission, everything in it (``visible_to`` for a viewer)."""
    ahead = queue_position(session, submission)
    return SubmissionPublic(
        id=submission.id,
        exercise=submission.exercise,
        user=submission.user.name,
        status=Status(submission.status),
        verdict=submission.verdict,  # type: ignore[arg-type]  # validated into Verdict
        score=submission.score,
        message=submission.message,
        checks=[
            CheckPublic(
                name=c.name,
                weight=c.weight,
                passed=c.passed,
                message=c.message,
                mistake_title=c.mistake_title,
                check_id=c.check_id,
                mistake_id=c.mistake_id,
            )
            for c in submission.checks
        ],
        stdout=submission.stdout,
        stderr=submission.stderr,
        timings=dict(submission.timings or {}),
        peak_memory_bytes=submission.peak_memory_bytes,
        cpu_seconds=submission.cpu_seconds,
        created_at=submission.created_at,
        started_at=submission.started_at,
        finished_at=submission.finished_at,
        queue_position=ahead,
        estimated_seconds=None if ahead is None else estimated_seconds(ahead, verdict_rate(session, utcnow())),
        **_late_fields(session, submission),  # type: ignore[arg-type]
        filename=submission.filename,
        feedback=_feedback(submission.feedback),
        content_version=submission.content_version,
        grader_version=submission.grader_version,
        regrades=regrade_notes(session, [submission.id]).get(submission.id, []),
    )


def _feedback(stored: dict[str, Any] | None) -> Feedback | None:
    """The stored feedback in its wire form; a row whose JSON no longer fits is shown without it."""
    if not stored:
        return None
    try:
        return Feedback.model_validate(stored)
    except ValidationError:
        return None


def list_submissions(
    session: Session,
    reader: User,
    *,
    exercise: str | None,
    user_name: str | None,
    limit: int,
    offset: int,
    now: datetime,
    course: Course | None = None,
) -> list[SubmissionSummary]:
    """The reader's own submissions, newest first (only ``course``'s when given); instructors
    may name another user and then see only the submissions of courses they teach. Each row
    as the reader may see it at ``now`` (the feedback policy applied)."""
    owner_name = user_name or reader.name
    if owner_name != reader.name and not Role(reader.role).reads_everything:
        raise NotAllowed("Only instructors and admins may list other users' submissions.")
    query = (
        select(Submission, User.name)
        .join(User, User.id == Submission.user_id)
        .where(User.name == owner_name)
        .order_by(Submission.created_at.desc(), Submission.id.desc())
        .limit(limit)
        .offset(offset)
    )
    if exercise:
        query = query.where(Submission.exercise == exercise)
    if course is not None:
        query = query.where(Submission.course_id == course.id)
    taught = taught_course_ids(session, reader)
    if owner_name != reader.name and taught is not None:
        query = query.where(Submission.course_id.in_(taught))
    found = session.execute(query).tuples().all()
    memo = AccessMemo()  # tokens spent today per (course, exercise), set entries: read once each
    notes = regrade_notes(session, (s.id for s, _ in found))
    return [
        visible_report(
            SubmissionSummary(
                id=s.id,
                exercise=s.exercise,
                user=name,
                status=Status(s.status),
                verdict=s.verdict,  # type: ignore[arg-type]
                score=s.score,
                message=s.message,
                created_at=s.created_at,
                started_at=s.started_at,
                finished_at=s.finished_at,
                **_late_fields(session, s),  # type: ignore[arg-type]
                regrades=notes.get(s.id, []),
            ),
            access_for(session, reader, s, now, teaches=taught is None or s.course_id in taught, memo=memo),
        )
        for s, name in found
    ]
