"""Similarity runs in the database: request one, compute one (the queue's job body), read the
ranked pairs, mark a pair reviewed.

- **What is compared**: per exercise of the course's set (the whole catalogue in the default
  course), each learner's latest finished submission (any verdict but ``internal_error``:
  a copy that fails is still a copy) and best graded one. Instructors' own tries are not
  compared. Sources are read one exercise at a time, so memory stays bounded by one
  exercise's files (each capped at ``MAX_SOURCE_BYTES``).
- **What is stored** (capped): the ``MAX_STORED_PAIRS`` best pairs over the course plus
  the ``PER_EXERCISE_PAIRS`` best of each exercise, each with its matching line spans (at most
  ``MAX_SPANS`` per side and exercise). The newest finished run is what every view reads.
- Nothing is shown to learners (routes and pages ask for the course's instructors) and
  nothing writes a score.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Protocol

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from exercises.registry import get_exercise
from server.catalogue.service import catalogue_index
from server.courses.counted import counts_as_attempt
from server.courses.sets import entries
from server.db import SessionFactory, transaction
from server.errors import InvalidCourse, UserNotFound
from server.leaderboard.service import learner_ids
from server.models import (
    BestScore,
    Course,
    Extension,
    ReviewMark,
    RunStatus,
    SetEntry,
    SimilarityPair,
    SimilarityReview,
    SimilarityRun,
    Submission,
    User,
    utcnow,
)
from server.similarity.engine import DEFAULT_TUNING, CoursePair, Entry, ExerciseComparison, Tuning, aggregate, rank

log = logging.getLogger(__name__)

MAX_STORED_PAIRS = 100
PER_EXERCISE_PAIRS = 20
MAX_SPANS = 50

#: Called inside the transaction that creates a run (procrastinate writes its job there).
Defer = Callable[[Session, int], None]


def no_defer(_session: Session, _run_id: int) -> None:
    """The in-process queue needs nothing in the transaction: the row is the record."""


class SimilarityQueue(Protocol):
    """What the routes and the due sweep hand a new run to (``similarity.jobs`` has both kinds)."""

    def defer(self, session: Session, run_id: int) -> None:
        """Inside the transaction that creates the run."""

    def enqueue(self, run_id: int) -> None:
        """After that transaction committed."""


def course_exercises(session: Session, course: Course) -> list[str]:
    """The slugs a run compares: the course's set (the catalogue in the default course)."""
    if course.is_default:
        return [e.slug for e in catalogue_index()]
    return [e.exercise for e in entries(session, course)]


def request_run(
    session: Session,
    course: Course,
    *,
    reason: str = "request",
    requested_by: User | None = None,
    defer: Defer = no_defer,
    now: datetime | None = None,
) -> tuple[SimilarityRun, bool]:
    """A queued run for ``course``, and whether it is new: a run still queued or running is
    returned instead of a second one. The caller commits (and then enqueues a new one)."""
    pending = session.scalar(
        select(SimilarityRun)
        .where(SimilarityRun.course_id == course.id, SimilarityRun.status.in_([RunStatus.QUEUED, RunStatus.RUNNING]))
        .order_by(SimilarityRun.id.desc())
        .limit(1)
    )
    if pending is not None:
        return pending, False
    run = SimilarityRun(
        course_id=course.id,
        reason=reason,
        requested_by=None if requested_by is None else requested_by.id,
        requested_at=now or utcnow(),
        status=RunStatus.QUEUED,
        summary={},
        message="",
    )
    session.add(run)
    session.flush()
    defer(session, run.id)
    return run, True


def due_courses(session: Session, now: datetime) -> list[Course]:
    """Courses with a due date (a set's, or an extension's) that passed after their last run
    was requested, or with no run at all: a due date is when its copies are settled."""
    last_run = (
        select(SimilarityRun.course_id, func.max(SimilarityRun.requested_at).label("at"))
        .group_by(SimilarityRun.course_id)
        .subquery()
    )
    found: dict[int, Course] = {}
    for table in (SetEntry, Extension):
        rows = session.scalars(
            select(Course)
            .join(table, table.course_id == Course.id)
            .outerjoin(last_run, last_run.c.course_id == Course.id)
            .where(
                table.due_at.is_not(None),
                table.due_at <= now,
                or_(last_run.c.at.is_(None), last_run.c.at < table.due_at),
            )
        )
        found.update((c.id, c) for c in rows)
    return [found[i] for i in sorted(found)]


def sweep_due(session: Session, now: datetime, defer: Defer = no_defer) -> list[int]:
    """Request a ``due`` run for every course whose due date passed since its last run."""
    created = []
    for course in due_courses(session, now):
        run, new = request_run(session, course, reason="due", defer=defer, now=now)
        if new:
            created.append(run.id)
    return created


def claim_run(session: Session, run_id: int) -> SimilarityRun | None:
    """Mark a queued run ``running`` (None when another worker has it or it is finished)."""
    run = session.get(SimilarityRun, run_id, with_for_update=True)
    if run is None or run.status != RunStatus.QUEUED:
        return None
    run.status = RunStatus.RUNNING
    run.started_at = utcnow()
    return run


def requeue_unfinished(session: Session) -> list[int]:
    """At start: runs a crash left ``running`` go back to ``queued``; every queued id."""
    for run in session.scalars(select(SimilarityRun).where(SimilarityRun.status == RunStatus.RUNNING)):
        run.status = RunStatus.QUEUED
    return list(
        session.scalars(
            select(SimilarityRun.id).where(SimilarityRun.status == RunStatus.QUEUED).order_by(SimilarityRun.id)
        )
    )


def _entries(session: Session, course_id: int, exercise: str) -> list[Entry]:
    """Each learner's latest finished and best graded submission of one exercise."""
    mine = [
        Submission.course_id == course_id,
        Submission.exercise == exercise,
        Submission.user_id.in_(learner_ids(course_id)),
    ]
    latest = select(func.max(Submission.id)).where(*mine, counts_as_attempt()).group_by(Submission.user_id)
    best = select(BestScore.best_submission_id).where(
        BestScore.course_id == course_id,
        BestScore.exercise == exercise,
        BestScore.best_submission_id.is_not(None),
        BestScore.user_id.in_(learner_ids(course_id)),
    )
    ids = set(session.scalars(latest)) | set(session.scalars(best))
    if not ids:
        return []
    rows = session.execute(
        select(Submission.user_id, Submission.id, Submission.source)
        .where(Submission.id.in_(ids))
        .order_by(Submission.id)
    )
    return [Entry(user_id, submission_id, source) for user_id, submission_id, source in rows]


@dataclass(frozen=True)
class Computed:
    """What one run found, before storing."""

    pairs: list[CoursePair]
    comparisons: dict[str, ExerciseComparison]
    learners: int
    submissions: int


def _compare(slug: str, found: list[Entry], tuning: Tuning) -> ExerciseComparison:
    """One exercise's comparison (run in a child process when a run has several)."""
    return ExerciseComparison(get_exercise(slug).starter, found, tuning)


def compute(
    session: Session, course_id: int, exercises: list[str], tuning: Tuning = DEFAULT_TUNING, processes: int = 1
) -> Computed:
    """Compare every learner pair of a course on each exercise and aggregate.

    With ``processes`` > 1, exercises are compared in that many child processes (spawned,
    not forked: the server has threads), at most ``processes`` exercises' files in memory at
    once. Normalising is pure Python and CPU-bound, so threads would not help.
    """
    comparisons: dict[str, ExerciseComparison] = {}
    learners: set[int] = set()
    submissions = 0

    def read(slug: str) -> list[Entry]:
        nonlocal submissions
        found = _entries(session, course_id, slug)
        submissions += len({e.submission for e in found})
        learners.update(e.learner for e in found)
        return found

    if processes <= 1 or len(exercises) <= 1:
        for slug in exercises:
            comparisons[slug] = _compare(slug, read(slug), tuning)
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=processes, mp_context=multiprocessing.get_context("spawn")) as pool:
            for start in range(0, len(exercises), processes):
                batch = exercises[start : start + processes]
                futures = {slug: pool.submit(_compare, slug, read(slug), tuning) for slug in batch}
                for slug, future in futures.items():
                    comparisons[slug] = future.result()
    return Computed(aggregate(comparisons), comparisons, len(learners), submissions)


def _kept(computed: Computed) -> list[CoursePair]:
    """The pairs a run stores: the best over the course, plus each exercise's best."""
    keep = {(p.learner_a, p.learner_b): p for p in computed.pairs[:MAX_STORED_PAIRS]}
    for slug in computed.comparisons:
        for p in rank(computed.pairs, slug)[:PER_EXERCISE_PAIRS]:
            keep.setdefault((p.learner_a, p.learner_b), p)
    return list(keep.values())


def _stored_exercises(pair: CoursePair, computed: Computed) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for slug, match in pair.exercises.items():
        spans_a, spans_b = computed.comparisons[slug].spans(match.submission_a, match.submission_b)
        out[slug] = {
            **asdict(match),
            "similarity": round(match.similarity, 4),
            "spans_a": [list(s) for s in spans_a[:MAX_SPANS]],
            "spans_b": [list(s) for s in spans_b[:MAX_SPANS]],
        }
    return out


def run_similarity(
    sessions: SessionFactory, run_id: int, tuning: Tuning = DEFAULT_TUNING, processes: int = 1
) -> str | None:
    """The job body of every queue: claim the run, compute (in ``processes`` child processes),
    store the capped pairs, mark it done (or ``failed`` with the reason). Returns the final
    status, None if not claimed."""
    with transaction(sessions) as session:
        run = claim_run(session, run_id)
        if run is None:
            return None
        course = session.get(Course, run.course_id)
        exercises = course_exercises(session, course) if course is not None else []
        course_id = run.course_id
    try:
        with sessions() as session:
            computed = compute(session, course_id, exercises, tuning, processes)
        with transaction(sessions) as session:
            kept = _kept(computed)
            for pair in kept:
                session.add(
                    SimilarityPair(
                        run_id=run_id,
                        learner_a_id=pair.learner_a,
                        learner_b_id=pair.learner_b,
                        score=round(pair.score, 4),
                        similar_on=pair.similar_on(tuning),
                        exercises=_stored_exercises(pair, computed),
                    )
                )
            run = session.get(SimilarityRun, run_id)
            assert run is not None
            run.status = RunStatus.DONE
            run.finished_at = utcnow()
            run.summary = {
                "exercises": exercises,
                "learners": computed.learners,
                "submissions": computed.submissions,
                "pairs_found": len(computed.pairs),
                "pairs_stored": len(kept),
                "tuning": asdict(tuning),
                "excluded_fingerprints": {s: c.excluded for s, c in computed.comparisons.items()},
            }
        log.info("similarity run done", extra={"run_id": run_id, "pairs": len(computed.pairs)})
        return RunStatus.DONE.value
    except Exception as exc:  # the run says it failed; the worker goes on
        log.exception("similarity run %s failed", run_id)
        with transaction(sessions) as session:
            run = session.get(SimilarityRun, run_id)
            if run is not None:
                run.status = RunStatus.FAILED
                run.finished_at = utcnow()
                run.message = f"{type(exc).__name__}: {str(exc)[:500]}"
        return RunStatus.FAILED.value


# --- Reading -------------------------------------------------------------------------------


def latest_run(session: Session, course: Course) -> SimilarityRun | None:
    """The course's newest run, whatever its state."""
    return session.scalar(
        select(SimilarityRun).where(SimilarityRun.course_id == course.id).order_by(SimilarityRun.id.desc()).limit(1)
    )


def latest_done_run(session: Session, course: Course) -> SimilarityRun | None:
    """The course's newest finished run: what the views show."""
    return session.scalar(
        select(SimilarityRun)
        .where(SimilarityRun.course_id == course.id, SimilarityRun.status == RunStatus.DONE)
        .order_by(SimilarityRun.id.desc())
        .limit(1)
    )


def newest_runs(session: Session, course: Course) -> tuple[SimilarityRun | None, SimilarityRun | None]:
    """(the course's newest run, the newest finished one: the run whose pairs are shown). The
    newest is read first and is the finished one when it is done: on PostgreSQL each statement
    sees what was committed before it, so the other order could read "no finished run", then
    the run finishing, and show "done" beside no pairs."""
    newest = latest_run(session, course)
    if newest is not None and newest.status == RunStatus.DONE:
        return newest, newest
    return newest, latest_done_run(session, course)


@dataclass(frozen=True)
class RankedPair:
    """One stored pair with the names and the review mark, for the views."""

    rank: int
    pair: SimilarityPair
    learner_a: User
    learner_b: User
    mark: str | None

    def similarity(self, exercise: str) -> float:
        """The pair's similarity on ``exercise`` (0 when not similar there)."""
        return float(self.pair.exercises.get(exercise, {}).get("similarity", 0.0))


def ranked_pairs(
    session: Session, run: SimilarityRun, exercise: str | None = None, limit: int | None = None
) -> list[RankedPair]:
    """The run's stored pairs ranked over the course, or by one exercise's similarity."""
    if exercise is not None and exercise not in run.summary.get("exercises", []):
        raise InvalidCourse(
            f"{exercise!r} is not one of the exercises this run compared: {', '.join(run.summary.get('exercises', [])) or 'none'}."
        )
    pairs = list(session.scalars(select(SimilarityPair).where(SimilarityPair.run_id == run.id)))
    if exercise is None:
        pairs.sort(key=lambda p: (-p.score, p.learner_a_id, p.learner_b_id))
    else:
        pairs = [p for p in pairs if exercise in p.exercises]
        pairs.sort(key=lambda p: (-p.exercises[exercise]["similarity"], -p.score, p.learner_a_id, p.learner_b_id))
    pairs = pairs[:limit] if limit is not None else pairs
    ids = {p.learner_a_id for p in pairs} | {p.learner_b_id for p in pairs}
    users = {u.id: u for u in session.scalars(select(User).where(User.id.in_(ids)))} if ids else {}
    marks = {
        (r.learner_a_id, r.learner_b_id): r.mark
        for r in session.scalars(select(SimilarityReview).where(SimilarityReview.course_id == run.course_id))
    }
    return [
        RankedPair(i + 1, p, users[p.learner_a_id], users[p.learner_b_id], marks.get((p.learner_a_id, p.learner_b_id)))
        for i, p in enumerate(pairs)
    ]


def ordered(session: Session, course: Course, name_a: str, name_b: str) -> tuple[User, User]:
    """Two learners of the course by login name, lower id first; 404 otherwise."""
    found = []
    for name in (name_a, name_b):
        user = session.scalar(select(User).where(User.name == name, User.id.in_(learner_ids(course.id))))
        if user is None:
            raise UserNotFound(f"No learner called {name!r} in {course.slug!r}.")
        found.append(user)
    if found[0].id == found[1].id:
        raise UserNotFound("A pair needs two different learners.")
    a, b = sorted(found, key=lambda u: u.id)
    return a, b


def stored_pair(session: Session, run: SimilarityRun, a: User, b: User) -> SimilarityPair | None:
    """The run's row for the pair (a.id < b.id), if it was stored."""
    return session.scalar(
        select(SimilarityPair).where(
            SimilarityPair.run_id == run.id, SimilarityPair.learner_a_id == a.id, SimilarityPair.learner_b_id == b.id
        )
    )


def review(
    session: Session, course: Course, a: User, b: User, mark: ReviewMark, reviewer: User | None
) -> SimilarityReview:
    """Set (or change) the course's mark on the pair. The caller commits."""
    row = session.get(SimilarityReview, (course.id, a.id, b.id))
    if row is None:
        row = SimilarityReview(course_id=course.id, learner_a_id=a.id, learner_b_id=b.id, mark=mark.value)
        session.add(row)
    row.mark = mark.value
    row.reviewer_id = None if reviewer is None else reviewer.id
    row.reviewed_at = utcnow()
    session.flush()
    return row
