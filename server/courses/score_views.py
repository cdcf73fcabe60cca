"""The score that counts in wire form: one translation for the API
(``/courses/{course}/scores``) and ``ppo-grader scores list``, so both say the same."""

from __future__ import annotations

from sqlalchemy.orm import Session

from server.courses import service
from server.courses.counted import Correction, ExerciseScore, course_scores, describe, score_that_counts
from server.courses.score_schemas import CorrectionPublic, ScorePublic
from server.courses.sets import course_exercises
from server.models import Course, User


def correction_public(c: Correction | None, course: Course) -> CorrectionPublic | None:
    """A correction on the wire, its time in the course's zone."""
    if c is None:
        return None
    return CorrectionPublic(score=c.score, reason=c.reason, made_by=c.made_by, made_at=service.local(c.made_at, course))  # type: ignore[arg-type]


def score_public(score: ExerciseScore, user: User, course: Course) -> ScorePublic:
    """One score on the wire: the same fields and the same ``described`` text as every page."""
    run = score.counting
    return ScorePublic(
        learner=user.name,
        display_name=user.display_name,
        exercise=score.exercise,
        counted_score=score.counted,
        raw_best_score=score.raw_best,
        counted_submission_id=run.submission_id if run else None,
        late=score.late,
        late_seconds=run.late_seconds if score.late and run else None,
        penalty_percent=score.penalty_percent,
        extended_to=service.local(score.extended_to, course),
        override=correction_public(score.override, course),
        excused=correction_public(score.excuse, course),
        attempts=score.attempts,
        described=describe(score, course.time_zone),
    )


def scores_of(session: Session, course: Course, learners: list[User], exercise: str | None = None) -> list[ScorePublic]:
    """Every learner of ``learners`` on every exercise of the course (or ``exercise``), by
    learner then catalogue order; an unattempted one is listed too, with no score."""
    slugs = [s for s in course_exercises(session, course) if exercise is None or s == exercise]
    found = course_scores(session, course, user_ids=[u.id for u in learners], exercises=slugs)
    return [
        score_public(
            found.get((u.id, slug)) or score_that_counts(u.id, slug, raw_best=None, counting=None, attempts=0),
            u,
            course,
        )
        for u in learners
        for slug in slugs
    ]
