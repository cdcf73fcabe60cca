"""``/exercises``: the catalogue (authentication required)."""

from __future__ import annotations

from fastapi import APIRouter

from server.catalogue import service
from server.catalogue.schemas import ExerciseDetail, ExerciseSummary
from server.catalogue.versions import version_for_user
from server.courses.sets import released_exercises
from server.deps import CurrentUser, Now, SessionDep
from server.openapi import errors

router = APIRouter(prefix="/exercises", tags=["exercises"])


@router.get("", response_model=list[ExerciseSummary], responses=errors(401))
def list_exercises(user: CurrentUser, session: SessionDep, now: Now) -> list[ExerciseSummary]:
    """The exercises, in catalogue order. A learner enrolled in courses sees those released
    in one of them (``GET /courses/{course}/exercises`` has the dates)."""
    visible = released_exercises(session, user, now)
    return [e for e in service.list_exercises() if visible is None or e.slug in visible]


@router.get("/{slug}", response_model=ExerciseDetail, responses=errors(401, 404))
def read_exercise(slug: str, user: CurrentUser, session: SessionDep, now: Now) -> ExerciseDetail:
    """One exercise with its description and starter template (at the version the caller's
    courses serve); 404 ``ExerciseNotFound``, also for a learner to whom none of their courses
    has released it yet (its description, starter and check names are not theirs to read before
    then, and the answer does not say it exists)."""
    version = version_for_user(session, user.id, slug) if len(slug) <= 64 else None
    return service.exercise_detail(slug, released_exercises(session, user, now), version)
