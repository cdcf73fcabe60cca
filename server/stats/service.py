"""Exercise statistics, each one aggregate query (learners only).

Attempts follow the leaderboard's rules (``server.leaderboard.service``): finished, not an
internal error. Check failure rates and named mistakes are read from graded submissions,
the only ones whose checks ran.

Checks and mistakes are counted by id (``check_results.check_id``, ``mistake_id``) and
shown with the catalogue's current wording, so rewording a check or a mistake never splits
its history. A row stored before ids (migration 0007 could not match its text) is counted
under its stored text instead: :func:`check_key` and :func:`mistake_key` are those keys.
"""

from __future__ import annotations

from sqlalchemy import case, distinct, func, select
from sqlalchemy.orm import Session

from exercises.registry import check_name, mistake_title
from server.courses.counted import FULL_SCORE, counts_as_attempt, course_scores
from server.leaderboard.service import learner_ids
from server.models import DEFAULT_COURSE_ID, CheckResult, Submission, Verdict
from server.stats.schemas import CheckStats, ExerciseStats, MistakeStats, ScoreBucket

S = Submission
C = CheckResult
BUCKETS = [(low, low + 9) for low in range(0, 100, 10)] + [(100, 100)]


def check_key():  # type: ignore[no-untyped-def]
    """SQL: what check results are grouped by: the check's id, else its stored sentence."""
    return func.coalesce(C.check_id, C.name)


def mistake_key():  # type: ignore[no-untyped-def]
    """SQL: what named mistakes are grouped by: the mistake's id, else its stored title."""
    return func.coalesce(C.mistake_id, C.mistake_title)


def current_check_name(key: str, stored: str) -> str:
    """The sentence to show for a check key: the catalogue's current one, else the stored one."""
    return check_name(key) or stored


def current_mistake_title(key: str, stored: str) -> str:
    """The title to show for a mistake key: the catalogue's current one, else the stored one."""
    return mistake_title(key) or stored


def _bucket(score):  # type: ignore[no-untyped-def]
    """SQL: the bucket index of a score (0..10); 100 (and above) in the last one."""
    return case((score >= FULL_SCORE, 10), else_=func.floor(func.coalesce(score, 0) / 10))


def exercise_stats(session: Session, exercise: str, course_id: int = DEFAULT_COURSE_ID) -> ExerciseStats:
    """All the numbers for one exercise in one course (its learners, its submissions). Per
    submission: raw scores. Per learner (solved, the distribution): the score that counts
    (``server.courses.counted``), as the boards and gradebooks count it."""
    mine = [S.course_id == course_id, S.exercise == exercise, S.user_id.in_(learner_ids(course_id))]
    graded = S.verdict == Verdict.GRADED.value

    totals = session.execute(
        select(
            func.count(),
            func.count(case((graded, 1))),
            func.count(distinct(case((counts_as_attempt(), S.user_id)))),
        ).where(*mine)
    ).one()
    learners = set(session.scalars(learner_ids(course_id)))
    scores = [s for (uid, _ex), s in course_scores(session, course_id, exercises=[exercise]).items() if uid in learners]

    per_submission: dict[int, int] = dict(
        session.execute(select(_bucket(S.score).label("b"), func.count()).where(*mine, graded).group_by("b"))
        .tuples()
        .all()
    )
    per_learner: dict[int, int] = {}
    for score in scores:
        if score.counted is not None and (
            score.counting is not None or score.override is not None
        ):  # graded or set by hand
            bucket = 10 if score.counted >= FULL_SCORE else int(score.counted // 10)
            per_learner[bucket] = per_learner.get(bucket, 0) + 1
    distribution = [
        ScoreBucket(low=low, high=high, learners=int(per_learner.get(i, 0)), submissions=int(per_submission.get(i, 0)))
        for i, (low, high) in enumerate(BUCKETS)
    ]

    graded_ids = select(S.id).where(*mine, graded)
    key = check_key().label("key")
    check_rows = session.execute(
        select(key, func.max(C.check_id), func.max(C.name), func.count(), func.count(case((C.passed.is_(False), 1))))
        .where(C.submission_id.in_(graded_ids))
        .group_by(key)
    ).tuples()
    checks = sorted(
        (
            CheckStats(
                name=current_check_name(k, stored),
                check_id=check_id,
                runs=runs,
                failures=failures,
                failure_rate=round(failures / runs, 4) if runs else 0.0,
            )
            for k, check_id, stored, runs, failures in check_rows
        ),
        key=lambda c: (-c.failure_rate, c.name),
    )

    named = mistake_key().label("key")
    miss_rows = session.execute(
        # Submissions, not check rows: one submission names a mistake on several checks.
        select(
            named,
            func.max(C.mistake_id),
            func.max(C.mistake_title),
            func.count(distinct(S.user_id)),
            func.count(distinct(S.id)),
        )
        .join(S, S.id == C.submission_id)
        .where(*mine, graded, named.is_not(None), C.passed.is_(False))
        .group_by(named)
    ).tuples()
    mistakes = sorted(
        (
            MistakeStats(
                mistake_title=current_mistake_title(k, stored), mistake_id=mistake_id, learners=n, submissions=c
            )
            for k, mistake_id, stored, n, c in miss_rows
        ),
        key=lambda m: (-m.learners, m.mistake_title),
    )
    return ExerciseStats(
        exercise=exercise,
        submissions=totals[0],
        graded_submissions=totals[1],
        learners_attempted=totals[2],
        learners_solved=sum(score.solved for score in scores),
        score_distribution=distribution,
        checks=checks,
        mistakes=mistakes,
    )


__all__ = ["exercise_stats"]
