"""``/exercises/{slug}/stats``: where the class is stuck (instructors)."""

from __future__ import annotations

from fastapi import APIRouter

from server.catalog.service import find_exercise
from server.deps import InstructorUser, SessionDep
from server.openapi import errors
from server.stats import service
from server.stats.schemas import ExerciseStats

router = APIRouter(tags=["statistics"])


@router.get("/exercises/{slug}/stats", response_model=ExerciseStats, responses=errors(401, 403, 404))
def exercise_stats(slug: str, _instructor: InstructorUser, session: SessionDep) -> ExerciseStats:
    """Submissions, learners attempted and solved, score distribution, per-check failure
    rates and per-misconception learner counts."""
    find_exercise(slug)
    return service.exercise_stats(session, slug)
