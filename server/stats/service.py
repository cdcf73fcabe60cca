"""Exercise statistics, each one aggregate query (learners only).

Attempts follow the leaderboard's rules (``server.leaderboard.service``): finished, not an
internal error. Check failure rates and misconceptions are read from graded submissions,
the only ones whose checks ran.
"""

from __future__ import annotations

from sqlalchemy import case, distinct, func, select
from sqlalchemy.orm import Session

from server.leaderboard.service import FULL_SCORE, counted, learner_ids
from server.models import DEFAULT_COURSE_ID, CheckResult, Submission, Verdict
from server.stats.schemas import CheckStats, ExerciseStats, MisconceptionStats, ScoreBucket

S = Submission
C = CheckResult
BUCKETS = [(low, low + 9) for low in range(0, 100, 10)] + [(100, 100)]


def _bucket(score):  # type: ignore[no-untyped-def]
    """SQL: the bucket index of a score (0..10); 100 (and above) in the last one."""
    return case((score >= FULL_SCORE, 10), else_=func.floor(func.coalesce(score, 0) / 10))


def exercise_stats(session: Session, exercise: str, course_id: int = DEFAULT_COURSE_ID) -> ExerciseStats:
    """All the numbers for one exercise in one course (its learners, its submissions; raw scores)."""
    mine = [S.course_id == course_id, S.exercise == exercise, S.user_id.in_(learner_ids(course_id))]
    graded = S.verdict == Verdict.GRADED.value

    totals = session.execute(
        select(
            func.count(),
            func.count(case((graded, 1))),
            func.count(distinct(case((S.verdict.is_not(None) & (S.verdict != Verdict.INTERNAL_ERROR.value), S.user_id)))),
            func.count(distinct(case((graded & (S.score >= FULL_SCORE), S.user_id)))),
        ).where(*mine)
    ).one()

    per_submission = dict(
        session.execute(
            select(_bucket(S.score).label("b"), func.count()).where(*mine, graded).group_by("b")
        ).tuples().all()
    )
    best = (
        select(func.max(S.score).label("best"))
        .where(*mine, graded)
        .group_by(S.user_id)
        .subquery()
    )
    per_learner = dict(
        session.execute(select(_bucket(best.c.best).label("b"), func.count()).group_by("b")).tuples().all()
    )
    distribution = [
        ScoreBucket(low=low, high=high, learners=int(per_learner.get(i, 0)), submissions=int(per_submission.get(i, 0)))
        for i, (low, high) in enumerate(BUCKETS)
    ]

    graded_ids = select(S.id).where(*mine, graded)
    check_rows = session.execute(
        select(C.name, func.count(), func.count(case((C.passed.is_(False), 1))))
        .where(C.submission_id.in_(graded_ids))
        .group_by(C.name)
    ).tuples()
    checks = sorted(
        (
            CheckStats(name=name, runs=runs, failures=failures, failure_rate=round(failures / runs, 4) if runs else 0.0)
            for name, runs, failures in check_rows
        ),
        key=lambda c: (-c.failure_rate, c.name),
    )

    miss_rows = session.execute(
        select(C.misconception, func.count(distinct(S.user_id)), func.count())
        .join(S, S.id == C.submission_id)
        .where(*mine, graded, C.misconception.is_not(None), C.passed.is_(False))
        .group_by(C.misconception)
    ).tuples()
    misconceptions = sorted(
        (MisconceptionStats(misconception=m, learners=n, submissions=k) for m, n, k in miss_rows),
        key=lambda m: (-m.learners, m.misconception),
    )
    return ExerciseStats(
        exercise=exercise,
        submissions=totals[0],
        graded_submissions=totals[1],
        learners_attempted=totals[2],
        learners_solved=totals[3],
        score_distribution=distribution,
        checks=checks,
        misconceptions=misconceptions,
    )


__all__ = ["counted", "exercise_stats"]
