"""Regrade sets: which verdicts are stale, choosing what to grade again, reading and cancelling.

- A verdict is *stale* when the exercise's content version or the grader's version that
  produced it differs from what this process loaded (exercises/versions.py). Verdicts
  stored before versions existed are ``unknown``, so stale.
- Only verdicts that count are chosen or counted: finished, not ``internal_error`` (the
  grader's fault never counted, and a regrade never turns it into an attempt).
- A preview is a set of ``queued`` results, one per chosen submission; the queue grades
  them (``server.grading.regrade_jobs``) while nothing learners see changes.
- Sets are the instructors' own: the CLI (the operator) reads every set, an admin too, an
  instructor the sets of the courses they teach; anyone else gets ``RegradeNotFound``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.orm import Session

from exercises.versions import exercise_ref
from server.catalogue.service import find_exercise
from server.catalogue.versions import UNVERIFIED, regrade_version, serving_ref
from server.courses import audit
from server.courses.counted import counts_as_attempt
from server.courses.service import taught_course_ids
from server.errors import ExerciseNotVerified, NothingToRegrade, RegradeClosed, RegradeNotFound
from server.grading.grader import verdict_versions
from server.grading.regrade_jobs import settle
from server.models import (
    AuditAction,
    BestScore,
    Course,
    RegradeResult,
    RegradeSet,
    RegradeState,
    Submission,
    User,
    utcnow,
)
from server.regrades.schemas import StalePublic

#: Defers the set's jobs in its transaction (procrastinate); None for the in-process queue.
Defer = Callable[[Session, RegradeSet], None]


def is_stale(versions: tuple[str, str], current: tuple[str, str]) -> bool:
    """A verdict graded with ``versions`` (content, grader) is stale against ``current``, the
    versions its course's set serves now: any difference ("unknown" included). The one test,
    in Python, for the stale counts and for a preview's choice."""
    return versions != current


@dataclass(frozen=True)
class StaleLine:
    """One course's one exercise: its counted verdicts, how many are stale, and how many of
    those are the verdict a learner's board score comes from."""

    course: str
    exercise: str
    verdicts: int
    stale: int
    stale_on_boards: int
    content_version: str

    def public(self) -> StalePublic:
        """As ``GET /regrades/stale`` answers it and ``ppo-grader regrade status`` prints it."""
        return StalePublic(
            course=self.course,
            exercise=self.exercise,
            verdicts=self.verdicts,
            stale=self.stale,
            stale_on_boards=self.stale_on_boards,
            current_version=self.content_version,
        )


def stale_lines(session: Session, course_ids: set[int] | None = None, exercise: str | None = None) -> list[StaleLine]:
    """Counted verdicts per course and exercise, with the stale ones, by this process's versions."""
    query = (
        select(
            Course.slug,
            Course.id,
            Submission.exercise,
            Submission.content_version,
            Submission.grader_version,
            func.count(),
            func.count(BestScore.counted_submission_id),
        )
        .join(Course, Course.id == Submission.course_id)
        .outerjoin(BestScore, BestScore.counted_submission_id == Submission.id)
        .where(counts_as_attempt())
        .group_by(Course.slug, Course.id, Submission.exercise, Submission.content_version, Submission.grader_version)
    )
    if course_ids is not None:
        query = query.where(Submission.course_id.in_(course_ids))
    if exercise is not None:
        query = query.where(Submission.exercise == exercise)
    totals: dict[tuple[str, str], list[int]] = {}
    versions: dict[tuple[str, str], tuple[str, str]] = {}
    for slug, course_id, name, content, grader, count, on_board in session.execute(query).tuples():
        # Current: the version the course's set serves (issue 32), not what this process loaded.
        if (slug, name) not in versions:
            versions[(slug, name)] = verdict_versions(serving_ref(session, course_id, name))
        current = versions[(slug, name)]
        line = totals.setdefault((slug, name), [0, 0, 0])
        line[0] += count
        if is_stale((content, grader), current):
            line[1] += count
            line[2] += on_board
    return [
        StaleLine(slug, name, verdicts, stale, on_boards, versions[(slug, name)][0])
        for (slug, name), (verdicts, stale, on_boards) in sorted(totals.items())
    ]


def create_preview(
    session: Session,
    *,
    exercise: str,
    course: Course | None = None,
    learner: User | None = None,
    submission_id: int | None = None,
    all_versions: bool = False,
    requested_by: User | None = None,
    defer: Defer | None = None,
) -> tuple[RegradeSet, list[int]]:
    """Choose the submissions to grade again and store a set of queued results (the caller
    commits, then hands the result ids to an in-process queue). Returns (set, result ids).

    By default only stale verdicts are chosen; ``all_versions`` takes every counted verdict.
    Raises ``NothingToRegrade`` when the selection is empty.
    """
    find_exercise(exercise)
    # The version the preview grades with, and names: what the set(s) serve (issue 32).
    version = regrade_version(session, exercise, course.id if course is not None else None)
    if version == UNVERIFIED:
        raise ExerciseNotVerified(
            f"{exercise}: no verified version of it is stored, so nothing can grade it again; run "
            "`ppo-grader exercises verify` first."
        )
    content, grader = verdict_versions(exercise_ref(exercise, version))
    query = (
        select(Submission.id, Submission.content_version, Submission.grader_version)
        .where(Submission.exercise == exercise, counts_as_attempt())
        .order_by(Submission.id)
    )
    if course is not None:
        query = query.where(Submission.course_id == course.id)
    if learner is not None:
        query = query.where(Submission.user_id == learner.id)
    if submission_id is not None:
        query = query.where(Submission.id == submission_id)
    chosen = [
        sid
        for sid, graded_content, graded_grader in session.execute(query).tuples()
        if all_versions or is_stale((graded_content, graded_grader), (content, grader))
    ]
    if not chosen:
        what = "no counted verdict" if all_versions else "no stale verdict (add --all-versions to regrade current ones)"
        raise NothingToRegrade(f"{exercise}: {what} matches this selection.")
    regrade = RegradeSet(
        exercise=exercise,
        course_id=course.id if course else None,
        user_id=learner.id if learner else None,
        submission_id=submission_id,
        all_versions=all_versions,
        state=RegradeState.GRADING,
        content_version=content,
        grader_version=grader,
        requested_by=requested_by.id if requested_by else None,
        created_at=utcnow(),
    )
    session.add(regrade)
    session.flush()
    session.execute(
        insert(RegradeResult),
        [
            {
                "set_id": regrade.id,
                "submission_id": sid,
                "status": "queued",
                "attempts": 0,
                "message": "",
                "checks": [],
                "stdout": "",
                "stderr": "",
                "timings": {},
            }
            for sid in chosen
        ],
    )
    if defer is not None:
        defer(session, regrade)
    ids = list(
        session.scalars(select(RegradeResult.id).where(RegradeResult.set_id == regrade.id).order_by(RegradeResult.id))
    )
    return regrade, ids


def readable_set(session: Session, set_id: int, reader: User | None) -> RegradeSet:
    """The set, if ``reader`` (None: the CLI) may see it; settled first (a finished set reads ready)."""
    regrade = session.get(RegradeSet, set_id)
    if (
        regrade is not None
        and reader is not None
        and not _may_read(session, regrade, taught_course_ids(session, reader))
    ):
        regrade = None
    if regrade is None:
        raise RegradeNotFound(f"No regrade {set_id} that you can read.")
    if regrade.state == RegradeState.GRADING and settle(session, regrade.id):
        session.refresh(regrade)
    return regrade


def _may_read(session: Session, regrade: RegradeSet, taught: set[int] | None) -> bool:
    """A set is an instructor's when they teach its course, or, for a set over every course
    (made with the CLI), every course its submissions belong to (None: an admin)."""
    if taught is None:
        return True
    if regrade.course_id is not None:
        return regrade.course_id in taught
    courses = set(
        session.scalars(
            select(Submission.course_id)
            .distinct()
            .join(RegradeResult, RegradeResult.submission_id == Submission.id)
            .where(RegradeResult.set_id == regrade.id)
        )
    )
    return courses <= taught  # a cancelled set has no results left: any instructor


def list_sets(session: Session, reader: User | None, limit: int = 50, course_id: int | None = None) -> list[RegradeSet]:
    """The newest sets ``reader`` may see (``course_id``: only that course's own sets)."""
    taught = taught_course_ids(session, reader) if reader is not None else None
    query = select(RegradeSet).order_by(RegradeSet.id.desc()).limit(limit * 4)
    if course_id is not None:
        query = query.where(RegradeSet.course_id == course_id)
    found = session.scalars(query)
    return [r for r in found if _may_read(session, r, taught)][:limit]


def progress(session: Session, set_id: int) -> tuple[int, int]:
    """(results graded, results in all) of a set."""
    rows = dict(
        session.execute(
            select(RegradeResult.status, func.count())
            .where(RegradeResult.set_id == set_id)
            .group_by(RegradeResult.status)
        )
        .tuples()
        .all()
    )
    return int(rows.get("done", 0)), int(sum(rows.values()))


def cancel(session: Session, regrade: RegradeSet, *, actor: str = "unknown") -> None:
    """Drop a set that was not applied: its results go, nothing learners see changed. A
    worker grading one of them finds its row gone and stores nothing. ``actor`` (who
    cancelled it) goes to the audit log."""
    # A compare-and-set on the state: an apply racing this cancel cannot both win.
    done = session.execute(
        update(RegradeSet)
        .where(RegradeSet.id == regrade.id, RegradeSet.state.in_([RegradeState.GRADING, RegradeState.READY]))
        .values(state=RegradeState.CANCELLED, cancelled_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    if done.rowcount != 1:  # type: ignore[attr-defined]
        session.refresh(regrade)
        raise RegradeClosed(f"Regrade {regrade.id} was {regrade.state} already; nothing changed.")
    session.execute(delete(RegradeResult).where(RegradeResult.set_id == regrade.id))
    session.refresh(regrade)
    audit.record(
        session, regrade.course_id, actor, AuditAction.REGRADE_CANCEL, f"regrade {regrade.id} ({regrade.exercise})"
    )
