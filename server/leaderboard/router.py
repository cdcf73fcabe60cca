"""``/leaderboard``: the best-score board (per exercise or overall) and the speed board."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from server.catalogue.service import find_exercise
from server.config import Settings
from server.courses.feedback_policy import PolicyKind, exercise_policy, hidden_board_exercises, refuse_hidden_board
from server.courses.service import INSTRUCTOR, course_role, readable_course
from server.courses.sets import released_exercises
from server.deps import CurrentUser, Now, SessionDep, SettingsDep
from server.leaderboard import service
from server.leaderboard.schemas import LeaderboardEntry, LeaderboardPage, SpeedEntry, SpeedPage
from server.models import Course, Role, User
from server.openapi import errors
from server.security import pseudonym

router = APIRouter(prefix="/leaderboard", tags=["leaderboard"])

Limit = Annotated[int, Query(ge=1, le=500)]
Offset = Annotated[int, Query(ge=0, le=1_000_000)]
CourseParam = Annotated[
    str | None,
    Query(max_length=64, description="Course slug (default: the default course); 404 `CourseNotFound` if not yours."),
]


def board_name(
    viewer: User,
    user_id: int,
    display_name: str,
    pseudonyms: bool,
    secret: bytes,
    teaches: bool | None = None,
    *,
    course_id: int,
) -> str:
    """What a viewer sees for a learner: real names for the course's instructors; for
    learners a pseudonym unless the course's instructor turned real names on
    (``courses.board_real_names``; their own row too, so it matches what others see;
    ``is_you`` marks it)."""
    instructor = Role(viewer.role).reads_everything if teaches is None else teaches
    if instructor or not pseudonyms:
        return display_name
    return pseudonym(user_id, secret, course_id)


@router.get("", response_model=LeaderboardPage, responses=errors(401, 403, 404, 422))
def leaderboard(
    viewer: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    now: Now,
    exercise: Annotated[str | None, Query(max_length=64, description="Omit for the overall table.")] = None,
    limit: Limit = 50,
    offset: Offset = 0,
    course: CourseParam = None,
) -> LeaderboardPage:
    """Per learner of the course: the board score (``board_score``: the score that counts of the
    confirmed checks only; an override as given), raw best, attempts, when the board score was
    first reached; stable order; a learner excused from the exercise is not ranked on it. For
    learners, a ``hidden-until-due`` exercise is left out of the overall table (and its own
    board is 403 ``ScoresHidden``) until its scores are released."""
    if exercise is not None:
        find_exercise(exercise, released_exercises(session, viewer, now))
    where = readable_course(session, viewer, course)
    hidden = hidden_board_exercises(session, viewer, where, now)
    if exercise is not None:
        refuse_hidden_board(session, viewer, where, exercise, now)
    total, rows = service.board(
        session, exercise, limit, offset, where.id, frozenset(hidden), secret=settings.secret_bytes
    )
    instructor = course_role(session, viewer, where) == INSTRUCTOR
    return LeaderboardPage(
        course=where.slug,
        exercise=exercise,
        total=total,
        limit=limit,
        offset=offset,
        entries=[
            LeaderboardEntry(
                rank=offset + i + 1,
                learner=_board_name(viewer, r.user_id, r.display_name, where, settings, instructor),
                name=r.name if instructor else None,
                is_you=r.user_id == viewer.id,
                board_score=r.best,
                raw_best_score=r.raw_best,
                attempts=r.attempts,
                solved=r.solved,
                best_reached_at=r.reached_at,
            )
            for i, r in enumerate(rows)
        ],
    )


def _board_name(
    viewer: User, user_id: int, display_name: str, where: Course, settings: Settings, instructor: bool
) -> str:
    """How a board row names its learner to ``viewer``: the course's pseudonym unless the course
    shows real names (instructors always see them)."""
    return board_name(
        viewer, user_id, display_name, not where.board_real_names, settings.secret_bytes, instructor, course_id=where.id
    )


@router.get("/{exercise}/speed", response_model=SpeedPage, responses=errors(401, 403, 404, 422))
def speed_leaderboard(
    exercise: str,
    viewer: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    now: Now,
    limit: Limit = 50,
    offset: Offset = 0,
    course: CourseParam = None,
) -> SpeedPage:
    """The course's learners with a full board score that counts (every confirmed check passed), by their
    fastest such run: cpu seconds, then peak memory (403 ``ScoresHidden`` for learners while a
    ``hidden-until-due`` exercise's scores are not released)."""
    find_exercise(exercise, released_exercises(session, viewer, now))
    where = readable_course(session, viewer, course)
    refuse_hidden_board(session, viewer, where, exercise, now)
    total, rows = service.speed_board(session, exercise, limit, offset, where.id)
    instructor = course_role(session, viewer, where) == INSTRUCTOR
    # Under any feedback policy but full a learner's own views hold back CPU and memory (a run
    # time is a channel for the hidden inputs): the speed board does too, keeping the order only.
    measured = instructor or exercise_policy(session, where.id, exercise).kind is PolicyKind.FULL
    return SpeedPage(
        exercise=exercise,
        total=total,
        limit=limit,
        offset=offset,
        entries=[
            SpeedEntry(
                rank=offset + i + 1,
                learner=_board_name(viewer, r.user_id, r.display_name, where, settings, instructor),
                name=r.name if instructor else None,
                is_you=r.user_id == viewer.id,
                submission_id=r.submission_id if instructor or r.user_id == viewer.id else None,
                cpu_seconds=r.cpu_seconds if measured else None,
                peak_memory_bytes=r.peak_memory_bytes if measured else None,
                submitted_at=r.created_at,
            )
            for i, r in enumerate(rows)
        ],
    )
