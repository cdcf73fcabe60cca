"""``/gradebook.csv`` (learner, exercise, best score, attempts, solved at) and
``/gradebook/wide.csv`` (a row per learner, a column per exercise, for Canvas and Moodle);
instructors only."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response

from server.courses.service import taught_course
from server.deps import InstructorUser, SessionDep
from server.gradebook.service import gradebook_csv, wide_gradebook_csv
from server.models import Course
from server.openapi import errors

router = APIRouter(tags=["gradebook"])


@router.get(
    "/gradebook.csv",
    response_class=Response,
    responses={
        200: {"content": {"text/csv": {"schema": {"type": "string"}}}, "description": "The gradebook as CSV"},
        **errors(401, 403, 404),
    },
)
def gradebook(
    instructor: InstructorUser,
    session: SessionDep,
    course: Annotated[
        str | None, Query(max_length=64, description="Course slug (default: the default course).")
    ] = None,
) -> Response:
    """Every learner of the course x every exercise of its set: best score that counts, raw
    best, attempts, when first solved (UTC), which submission counted and whether it was
    late (the course's instructors only; 404 ``CourseNotFound`` otherwise)."""
    where = taught_course(session, instructor, course)
    return Response(
        gradebook_csv(session, where),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{_name("gradebook", where)}"'},
    )


@router.get(
    "/gradebook/wide.csv",
    response_class=Response,
    responses={
        200: {"content": {"text/csv": {"schema": {"type": "string"}}}, "description": "The wide gradebook as CSV"},
        **errors(401, 403, 404),
    },
)
def wide_gradebook(
    instructor: InstructorUser,
    session: SessionDep,
    course: Annotated[
        str | None, Query(max_length=64, description="Course slug (default: the default course).")
    ] = None,
) -> Response:
    """One row per learner of the course, one column per exercise of its set (the best score
    that counts, out of 100; empty where never attempted), in the layout Canvas's gradebook
    import expects; Moodle imports it too (the course's instructors only; 404 ``CourseNotFound`` otherwise)."""
    where = taught_course(session, instructor, course)
    return Response(
        wide_gradebook_csv(session, where),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{_name("gradebook-wide", where)}"'},
    )


def _name(stem: str, course: Course) -> str:
    """``gradebook.csv`` for the default course (as before courses), ``gradebook-SLUG.csv`` else."""
    return f"{stem}.csv" if course.is_default else f"{stem}-{course.slug}.csv"
