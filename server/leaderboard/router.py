"""``/leaderboard``: the best-score board (per exercise or overall) and the speed board."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from server.catalog.service import find_exercise
from server.deps import CurrentUser, SessionDep, SettingsDep
from server.leaderboard import service
from server.leaderboard.schemas import LeaderboardEntry, LeaderboardPage, SpeedEntry, SpeedPage
from server.models import Role, User
from server.openapi import errors
from server.security import pseudonym

router = APIRouter(prefix="/leaderboard", tags=["leaderboard"])

Limit = Annotated[int, Query(ge=1, le=500)]
Offset = Annotated[int, Query(ge=0, le=1_000_000)]


def shown_name(viewer: User, user_id: int, display_name: str, pseudonyms: bool, secret: bytes) -> str:
    """What a viewer sees for a learner: real names for instructors; for learners the
    display name, or a pseudonym when the setting asks (their own row included, so it
    matches what others see; ``is_you`` marks it)."""
    if Role(viewer.role).reads_everything or not pseudonyms:
        return display_name
    return pseudonym(user_id, secret)


@router.get("", response_model=LeaderboardPage, responses=errors(401, 404, 422))
def leaderboard(
    viewer: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    exercise: Annotated[str | None, Query(max_length=64, description="Omit for the overall table.")] = None,
    limit: Limit = 50,
    offset: Offset = 0,
) -> LeaderboardPage:
    """Per learner: best score, attempts, when the best was first reached; stable order."""
    if exercise is not None:
        find_exercise(exercise)
    total, rows = service.board(session, exercise, limit, offset)
    instructor = Role(viewer.role).reads_everything
    return LeaderboardPage(
        exercise=exercise,
        total=total,
        limit=limit,
        offset=offset,
        entries=[
            LeaderboardEntry(
                rank=offset + i + 1,
                learner=shown_name(viewer, r.user_id, r.display_name, settings.LEADERBOARD_PSEUDONYMS, settings.secret_bytes),
                name=r.name if instructor else None,
                is_you=r.user_id == viewer.id,
                best_score=r.best,
                attempts=r.attempts,
                solved=r.solved,
                best_reached_at=r.reached_at,
            )
            for i, r in enumerate(rows)
        ],
    )


@router.get("/{exercise}/speed", response_model=SpeedPage, responses=errors(401, 404, 422))
def speed_leaderboard(
    exercise: str, viewer: CurrentUser, session: SessionDep, settings: SettingsDep, limit: Limit = 50, offset: Offset = 0
) -> SpeedPage:
    """Learners who scored 100, by their fastest full-score run: cpu seconds, then peak memory."""
    find_exercise(exercise)
    total, rows = service.speed_board(session, exercise, limit, offset)
    instructor = Role(viewer.role).reads_everything
    return SpeedPage(
        exercise=exercise,
        total=total,
        limit=limit,
        offset=offset,
        entries=[
            SpeedEntry(
                rank=offset + i + 1,
                learner=shown_name(viewer, r.user_id, r.display_name, settings.LEADERBOARD_PSEUDONYMS, settings.secret_bytes),
                name=r.name if instructor else None,
                is_you=r.user_id == viewer.id,
                submission_id=r.submission_id if instructor or r.user_id == viewer.id else None,
                cpu_seconds=r.cpu_seconds,
                peak_memory_bytes=r.peak_memory_bytes,
                submitted_at=r.created_at,
            )
            for i, r in enumerate(rows)
        ],
    )
