"""Regrade sets and their diffs in wire form (the API and the dashboard page read these)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import Course, Keep, RegradeSet, User
from server.regrades.diff import Change, Diff, compute_diff
from server.regrades.schemas import ChangePublic, LearnerShiftPublic, RegradeDiff, RegradePublic, ShiftPublic
from server.regrades.service import progress


def regrade_public(session: Session, regrade: RegradeSet) -> RegradePublic:
    """The set, with its filters by name and its progress."""
    graded, total = progress(session, regrade.id)
    course = session.scalar(select(Course.slug).where(Course.id == regrade.course_id)) if regrade.course_id else None
    learner = session.scalar(select(User.name).where(User.id == regrade.user_id)) if regrade.user_id else None
    return RegradePublic(
        id=regrade.id,
        exercise=regrade.exercise,
        course=course,
        learner=learner,
        submission=regrade.submission_id,
        all_versions=regrade.all_versions,
        state=regrade.state,  # type: ignore[arg-type]  # the column holds the enum's value; pydantic validates it
        graded=graded,
        total=total,
        content_version=regrade.content_version,
        grader_version=regrade.grader_version,
        created_at=regrade.created_at,
        keep=regrade.keep,  # type: ignore[arg-type]  # the column holds the enum's value; pydantic validates it
        reason=regrade.reason,
        applied_at=regrade.applied_at,
        cancelled_at=regrade.cancelled_at,
    )


def change_public(change: Change) -> ChangePublic:
    return ChangePublic(
        submission=change.submission_id,
        learner=change.user_name,
        old_verdict=change.old.verdict,
        old_score=change.old.score,
        old_counted_score=change.old.counted,
        new_verdict=change.new.verdict,
        new_score=change.new.score,
        new_counted_score=change.new.counted,
    )


def diff_public(session: Session, regrade: RegradeSet, keep: Keep = Keep.NEW, diff: Diff | None = None) -> RegradeDiff:
    """The set's diff as the API sends it."""
    diff = diff or compute_diff(session, regrade, keep)
    counts = diff.counts()
    return RegradeDiff(
        regrade=regrade_public(session, regrade),
        keep=keep,
        up=counts["up"],
        down=counts["down"],
        same=counts["same"],
        failed=[c.submission_id for c in diff.failed],
        changed=[change_public(c) for c in diff.changed],
        largest=[change_public(c) for c in diff.largest()],
        checks=[ShiftPublic(id=s.id, now_failing=s.now_failing, now_passing=s.now_passing) for s in diff.checks],
        mistakes=[ShiftPublic(id=s.id, now_failing=s.now_failing, now_passing=s.now_passing) for s in diff.mistakes],
        learners=[
            LearnerShiftPublic(
                course=s.course,
                learner=s.user_name,
                old_score=s.old_score,
                new_score=s.new_score,
                old_rank=s.old_rank,
                new_rank=s.new_rank,
            )
            for s in diff.learners
        ],
        replaced=replaced(diff, keep),
    )


def replaced(diff: Diff, keep: Keep) -> int:
    """How many verdicts an apply of ``diff`` with ``keep`` replaces (``ppo-grader regrade apply`` says it)."""
    return sum(1 for c in diff.changed if c.kept(keep) is c.new)
