"""Making a regrade set live, in one transaction.

For each submission whose regraded verdict differs (and, with ``keep=higher``, does not lower
the score that counts): the verdict learners saw is copied into ``superseded_verdicts`` with
the set's id, and the submission row takes the new verdict, score, checks, feedback and
versions. The score that counts is recomputed with the penalty fixed at acceptance, so a
regrade changes values, never deadlines. Unchanged verdicts only take the new versions (they
are no longer stale). Then ``best_scores`` is rebuilt for every learner and exercise touched,
so boards, statistics and both gradebooks, which read the submission rows and that table,
follow. Everything commits together or not at all: a crash mid-apply leaves the set
``ready`` and every score as it was, and the apply can simply run again.
"""

from __future__ import annotations

import os
import signal

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from server.courses import audit
from server.courses.best_scores import backfill_best_scores
from server.courses.counted import submission_board, submission_counted
from server.errors import InvalidCourse, RegradeClosed, RegradeNotReady
from server.grading.persistence import check_results
from server.grading.regrade_jobs import settle
from server.models import (
    AuditAction,
    Keep,
    RegradeResult,
    RegradeSet,
    RegradeState,
    Submission,
    SupersededVerdict,
    Verdict,
    utcnow,
)
from server.regrades.diff import Diff, compute_diff
from server.text_guard import is_blank, is_storable_text

#: Longest reason stored (shown to learners next to their score).
REASON_CHARS = 500


def apply_set(
    session: Session, regrade: RegradeSet, *, keep: Keep = Keep.NEW, reason: str, actor: str = "unknown"
) -> Diff:
    """Apply ``regrade`` (the caller commits); returns the diff that was applied. ``actor`` (who
    applied it) goes to the audit log, one event per course whose verdicts it replaced (the
    set's own course, or none, when it replaced nothing).

    Refused with ``RegradeClosed`` when it was applied or cancelled already (never twice) and
    with ``RegradeNotReady`` while results are still being graded.
    """
    if not is_storable_text(reason) or is_blank(reason):  # learners read it; PostgreSQL refuses a NUL (a 500)
        raise InvalidCourse("Say why, in text that can be stored (no NUL byte): learners read the reason.")
    settle(session, regrade.id)
    # The compare-and-set first: a second apply (or a cancel) racing this one finds the set
    # no longer ``ready``; on PostgreSQL it waits on this row's lock until we commit.
    claimed = session.execute(
        update(RegradeSet)
        .where(RegradeSet.id == regrade.id, RegradeSet.state == RegradeState.READY)
        .values(state=RegradeState.APPLIED, keep=keep.value, reason=reason.strip()[:REASON_CHARS], applied_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    if claimed.rowcount != 1:  # type: ignore[attr-defined]
        session.refresh(regrade)
        if regrade.state == RegradeState.GRADING:
            raise RegradeNotReady(f"Regrade {regrade.id} is still grading; apply it once `regrade show` says ready.")
        raise RegradeClosed(f"Regrade {regrade.id} was {regrade.state} already; a regrade is applied once.")
    session.refresh(regrade)
    diff = compute_diff(session, regrade, keep)
    results = {r.id: r for r in session.scalars(select(RegradeResult).where(RegradeResult.set_id == regrade.id))}
    touched: set[tuple[int, int, str]] = set()
    for done, change in enumerate(diff.changes, start=1):
        _test_hook(session, done, len(diff.changes))
        if change.failed:
            continue  # the grader's fault: the verdict learners saw stays
        result = results[change.result_id]
        submission = session.get(Submission, change.submission_id, with_for_update=True)
        if submission is None:
            continue
        if change.kept(keep) is change.new and change.changed:
            _replace(session, submission, result, regrade.id)
            touched.add((submission.course_id, submission.user_id, submission.exercise))
        elif not change.changed:
            # Same verdict from the new versions: no longer stale, nothing for learners to see.
            submission.content_version = result.content_version or submission.content_version
            submission.grader_version = result.grader_version or submission.grader_version
    session.flush()
    for course_id, user_id, exercise in sorted(touched):
        backfill_best_scores(session, course_id, user_id, exercise)
    per_course: dict[int | None, int] = {}
    for touched_course, _, _ in touched:
        per_course[touched_course] = per_course.get(touched_course, 0) + 1
    for where, learners in sorted(per_course.items() or [(regrade.course_id, 0)], key=lambda x: x[0] or 0):
        audit.record(
            session,
            where,
            actor,
            AuditAction.REGRADE_APPLY,
            f"regrade {regrade.id} ({regrade.exercise})",
            f"keep {keep.value}; {learners} learners' verdicts replaced: {reason.strip()}",
        )
    return diff


def _replace(session: Session, submission: Submission, result: RegradeResult, set_id: int) -> None:
    """Keep the verdict learners saw as history, then put the regraded one in its place."""
    graded = result.verdict == Verdict.GRADED.value
    new_counted = submission_counted(result.score, submission.penalty_percent) if graded else None
    session.add(
        SupersededVerdict(
            submission_id=submission.id,
            set_id=set_id,
            verdict=submission.verdict,
            score=submission.score,
            counted_score=submission.counted_score,
            message=submission.message,
            checks=[
                {
                    "name": c.name,
                    "check_id": c.check_id,
                    "weight": c.weight,
                    "passed": c.passed,
                    "message": c.message,
                    "mistake_title": c.mistake_title,
                    "mistake_id": c.mistake_id,
                    "self_reported": c.self_reported,
                }
                for c in submission.checks
            ],
            feedback=submission.feedback,
            content_version=submission.content_version,
            grader_version=submission.grader_version,
            finished_at=submission.finished_at,
            new_verdict=result.verdict,
            new_score=result.score,
            new_counted_score=new_counted,
            superseded_at=utcnow(),
        )
    )
    submission.checks.clear()
    session.flush()
    submission.checks.extend(check_results(result.checks or []))
    submission.verdict = result.verdict
    submission.score = result.score
    submission.counted_score = new_counted  # late_seconds and penalty_percent stay as accepted
    submission.board_score = submission_board(result.checks or [], submission.penalty_percent) if graded else None
    submission.message = result.message
    submission.feedback = result.feedback
    submission.stdout, submission.stderr = result.stdout, result.stderr
    submission.timings = dict(result.timings or {})
    submission.peak_memory_bytes = result.peak_memory_bytes
    submission.cpu_seconds = result.cpu_seconds
    submission.content_version = result.content_version or submission.content_version
    submission.grader_version = result.grader_version or submission.grader_version


def _test_hook(session: Session, done: int, total: int) -> None:
    """Inert unless set: ``PPO_GRADER_TEST_KILL_IN_APPLY=1`` SIGKILLs this process halfway
    through an apply, its first half written to the database but not committed (the
    crash-safety test of a half-applied regrade)."""
    if os.environ.get("PPO_GRADER_TEST_KILL_IN_APPLY") and done > total // 2:
        session.flush()
        os.kill(os.getpid(), signal.SIGKILL)
