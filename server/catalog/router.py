"""``/exercises``: the catalog (authentication required)."""

from __future__ import annotations

from fastapi import APIRouter

from server.catalog import service
from server.catalog.schemas import ExerciseDetail, ExerciseSummary
from server.openapi import errors
from server.deps import CurrentUser

router = APIRouter(prefix="/exercises", tags=["exercises"])


@router.get("", response_model=list[ExerciseSummary], responses=errors(401))
def list_exercises(_user: CurrentUser) -> list[ExerciseSummary]:
    """All exercises, in course order."""
    return service.list_exercises()


@router.get("/{slug}", response_model=ExerciseDetail, responses=errors(401, 404))
def read_exercise(slug: str, _user: CurrentUser) -> ExerciseDetail:
    """One exercise with its description and starter template; 404 ``ExerciseNotFound``."""
    return service.exercise_detail(slug)
