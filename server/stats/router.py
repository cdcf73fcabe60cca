"""``/exercises/{slug}/stats``: where the class is stuck (instructors)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from server.catalogue.service import find_exercise
from server.courses.service import taught_course
from server.deps import InstructorUser, SessionDep
from server.openapi import errors
from server.stats import service
from server.stats.schemas import ExerciseStats

router = APIRouter(tags=["statistics"])


@router.get("/exercises/{slug}/stats", response_model=ExerciseStats, responses=errors(401, 403, 404))
def exercise_stats(
    slug: str,
    instructor: InstructorUser,
    session: SessionDep,
    course: Annotated[
        str | None, Query(max_length=64, description="Course slug (default: the default course).")
    ] = None,
) -> ExerciseStats:
    """One course's submissions, learners attempted and solved, score distribution,
    per-check failure rates and per-mistake learner counts (its instructors only;
    404 ``CourseNotFound`` for a course the caller does not teach)."""
    find_exercise(slug)
    where = taught_course(session, instructor, course)
    return service.exercise_stats(session, slug, where.id)
