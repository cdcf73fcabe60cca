"""``/courses/{course}/scores``: the score that counts per learner and exercise, and its
corrections (override, excuse, taking either back); ``/courses/{course}/settings``.

Learners read their own scores only (with every correction's reason); the course's staff
(instructors and TAs, as on the dashboard's learner page) read everyone's and correct them.
Same rules and words as ``ppo-grader scores``, which calls the same services
(``server.courses.corrections``, ``server.courses.counted``). Each correction takes
``?dry_run=true``: the same refusals and the score it would leave, nothing written (a PUT or a
DELETE still: a read-only token may not).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from sqlalchemy.orm import Session

from server.courses import corrections, service
from server.courses.feedback_policy import hidden_own_exercises
from server.courses.score_schemas import (
    CourseScores,
    CourseSettings,
    ExcuseIn,
    OverrideIn,
    ScorePublic,
    TakenBack,
)
from server.courses.score_views import scores_of
from server.courses.sets import listing
from server.db import rolled_back
from server.deps import CurrentUser, InstructorUser, Now, SessionDep
from server.errors import UserNotFound
from server.models import CorrectionKind, Course
from server.openapi import errors

router = APIRouter(prefix="/courses", tags=["courses"])

CourseSlug = Annotated[str, Path(max_length=64, description="Course slug.")]
ExerciseSlug = Annotated[str, Path(max_length=64, description="Exercise slug.")]
LearnerName = Annotated[str, Path(max_length=64, description="The learner's login name.")]


@router.get("/{course}/scores", response_model=CourseScores, responses=errors(401, 404))
def list_scores(
    course: CourseSlug,
    user: CurrentUser,
    session: SessionDep,
    now: Now,
    learner: Annotated[
        str | None, Query(max_length=64, description="One learner (instructors); learners get their own.")
    ] = None,
    exercise: Annotated[str | None, Query(max_length=64, description="One exercise of the course.")] = None,
) -> CourseScores:
    """The score that counts per learner and exercise: raw best, late mark, penalty,
    extension, override, excuse, and the text every view shows. 404 for another learner's.
    A learner's own score on a ``hidden-until-due`` exercise stays hidden until their due date."""
    where = service.readable_course(session, user, course)
    if service.course_role(session, user, where) == service.INSTRUCTOR:
        people = (
            service.members(session, where)
            if learner is None
            else [corrections.course_learner(session, where, learner)]
        )
        return CourseScores(
            course=where.slug, time_zone=where.time_zone, scores=scores_of(session, where, people, exercise)
        )
    if learner not in (None, user.name):
        raise UserNotFound(f"No learner {learner!r} in {where.slug!r} whose scores you may read.")
    hidden = hidden_own_exercises(session, user, now, where)
    released = {item.exercise for item in listing(session, where, user, now)}  # an unreleased one is not named
    own = [
        _held_back(s) if s.exercise in hidden else s
        for s in scores_of(session, where, [user], exercise)
        if s.exercise in released
    ]
    return CourseScores(course=where.slug, time_zone=where.time_zone, scores=own)


def _held_back(score: ScorePublic) -> ScorePublic:
    """A score the feedback policy holds back: only that it exists, and its corrections' absence of numbers."""
    return score.model_copy(
        update={
            "counted_score": None,
            "raw_best_score": None,
            "counted_submission_id": None,
            "late": False,
            "late_seconds": None,
            "penalty_percent": 0.0,
            "override": None,
            "excused": None,
            "described": HIDDEN_DESCRIBED,
        }
    )


#: What a held-back score reads as, on every view (the learner's page says the same).
HIDDEN_DESCRIBED = "hidden until due"


def _one(session: Session, course: Course, learner: str, exercise: str) -> ScorePublic:
    user = corrections.course_learner(session, course, learner)
    return scores_of(session, course, [user], exercise)[0]


#: ``?dry_run=true`` of the corrections.
DryRun = Annotated[bool, Query(description="Only answer the score it would leave (same refusals); nothing is written.")]


@router.put(
    "/{course}/scores/{learner}/{exercise}/override", response_model=ScorePublic, responses=errors(401, 403, 404, 422)
)
def set_override(
    course: CourseSlug,
    learner: LearnerName,
    exercise: ExerciseSlug,
    payload: OverrideIn,
    staff: CurrentUser,
    session: SessionDep,
    dry_run: DryRun = False,
) -> ScorePublic:
    """Set the learner's score that counts on one exercise by hand, with a reason they will read;
    the course's staff (instructors and TAs), signed with the caller's name."""
    where = service.taught_course(session, staff, course)
    if dry_run:
        with rolled_back(session):
            corrections.override(session, where, learner, exercise, payload.score, payload.reason, staff.name)
            return _one(session, where, learner, exercise)
    corrections.override(session, where, learner, exercise, payload.score, payload.reason, staff.name)
    session.commit()
    return _one(session, where, learner, exercise)


@router.put(
    "/{course}/scores/{learner}/{exercise}/excuse", response_model=ScorePublic, responses=errors(401, 403, 404, 422)
)
def set_excuse(
    course: CourseSlug,
    learner: LearnerName,
    exercise: ExerciseSlug,
    payload: ExcuseIn,
    staff: CurrentUser,
    session: SessionDep,
    dry_run: DryRun = False,
) -> ScorePublic:
    """Take one exercise out of the learner's average, with a reason they will read; the
    course's staff (instructors and TAs)."""
    where = service.taught_course(session, staff, course)
    if dry_run:
        with rolled_back(session):
            corrections.excuse(session, where, learner, exercise, payload.reason, staff.name)
            return _one(session, where, learner, exercise)
    corrections.excuse(session, where, learner, exercise, payload.reason, staff.name)
    session.commit()
    return _one(session, where, learner, exercise)


@router.delete(
    "/{course}/scores/{learner}/{exercise}/{kind}", response_model=TakenBack, responses=errors(401, 403, 404, 422)
)
def take_back(
    course: CourseSlug,
    learner: LearnerName,
    exercise: ExerciseSlug,
    kind: CorrectionKind,
    staff: CurrentUser,
    session: SessionDep,
    dry_run: DryRun = False,
) -> TakenBack:
    """Take an override or an excuse back (it stays on record, revoked); the graded score counts
    again. The course's staff (instructors and TAs); ``revoked`` 0: none was in force."""
    where = service.taught_course(session, staff, course)
    if dry_run:
        with rolled_back(session):
            undone = corrections.take_back(session, where, learner, exercise, kind, staff.name)
            return TakenBack(kind=kind.value, revoked=undone.revoked, score=_one(session, where, learner, exercise))
    undone = corrections.take_back(session, where, learner, exercise, kind, staff.name)
    session.commit()
    return TakenBack(kind=kind.value, revoked=undone.revoked, score=_one(session, where, learner, exercise))


@router.patch("/{course}/settings", response_model=CourseSettings, responses=errors(401, 403, 404, 422))
def change_settings(
    course: CourseSlug, payload: CourseSettings, instructor: InstructorUser, session: SessionDep
) -> CourseSettings:
    """Per-course settings: whether learners see real names on the course's boards."""
    where = service.taught_course(session, instructor, course)
    where.board_real_names = payload.board_real_names
    session.commit()
    return CourseSettings(board_real_names=where.board_real_names)
