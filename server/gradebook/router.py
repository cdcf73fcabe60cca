"""``/gradebook.csv`` (a row per learner and exercise: the score that counts, raw best,
attempts, ...), ``/gradebook/canvas.csv`` and ``/gradebook/moodle.csv`` (a row per learner, a
column per exercise, as Canvas's and Moodle's imports read them); the course's staff only
(instructors and TAs). The rule every file follows: ``server.gradebook.service``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response

from server.courses.service import taught_course
from server.deps import CurrentUser, SessionDep
from server.gradebook.formats import LoginColumn
from server.gradebook.service import canvas_gradebook_csv, gradebook_csv, moodle_gradebook_csv
from server.models import Course
from server.openapi import errors

router = APIRouter(tags=["gradebook"])

CourseQuery = Annotated[str | None, Query(max_length=64, description="Course slug (default: the default course).")]


@router.get(
    "/gradebook.csv",
    response_class=Response,
    responses={
        200: {"content": {"text/csv": {"schema": {"type": "string"}}}, "description": "The gradebook as CSV"},
        **errors(401, 403, 404),
    },
)
def gradebook(staff: CurrentUser, session: SessionDep, course: CourseQuery = None) -> Response:
    """Every learner of the course x every exercise of its set: the score that counts
    (``counted_score``; empty where excused or never attempted), raw best, attempts, when first
    solved (UTC), which submission counted and whether it was late (the course's staff
    only; 404 ``CourseNotFound`` otherwise)."""
    where = taught_course(session, staff, course)
    return _file(gradebook_csv(session, where), _name("gradebook", where))


@router.get(
    "/gradebook/canvas.csv",
    response_class=Response,
    responses={
        200: {"content": {"text/csv": {"schema": {"type": "string"}}}, "description": "The Canvas gradebook as CSV"},
        **errors(401, 403, 404, 422),
    },
)
def canvas_gradebook(
    staff: CurrentUser,
    session: SessionDep,
    course: CourseQuery = None,
    login_column: Annotated[
        LoginColumn,
        Query(
            description="The Canvas column our logins go in: `sis-login-id` (logins are the SIS Login IDs, the "
            "default) or `sis-user-id` (logins are the SIS User IDs, e.g. student numbers)."
        ),
    ] = "sis-login-id",
) -> Response:
    """One row per learner of the course, one column per exercise of its set, in the layout of
    Canvas's gradebook export (which its import reads): the score that counts out of 100, `EX`
    where excused, empty where never attempted; a `Points Possible` row of 100s (the course's
    staff only; 404 ``CourseNotFound`` otherwise). docs/instructors.md, "Gradebooks and exports"."""
    where = taught_course(session, staff, course)
    return _file(canvas_gradebook_csv(session, where, login_column), _name("gradebook-canvas", where))


# The Canvas file's first name (before the Moodle file had its own), kept for links and scripts.
router.add_api_route("/gradebook/wide.csv", canvas_gradebook, methods=["GET"], include_in_schema=False)


@router.get(
    "/gradebook/moodle.csv",
    response_class=Response,
    responses={
        200: {"content": {"text/csv": {"schema": {"type": "string"}}}, "description": "The Moodle gradebook as CSV"},
        **errors(401, 403, 404),
    },
)
def moodle_gradebook(staff: CurrentUser, session: SessionDep, course: CourseQuery = None) -> Response:
    """One row per learner of the course (``Username``: the login; ``Full name``), one column per
    exercise of its set, for Moodle's "Import grades from CSV file": the score that counts out of
    100, ``-`` (Moodle's "no grade") where excused or never attempted (the course's staff
    only; 404 ``CourseNotFound`` otherwise)."""
    where = taught_course(session, staff, course)
    return _file(moodle_gradebook_csv(session, where), _name("gradebook-moodle", where))


def _file(body: str, filename: str) -> Response:
    return Response(
        body,
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


def _name(stem: str, course: Course) -> str:
    """``gradebook.csv`` for the default course (as before courses), ``gradebook-SLUG.csv`` else."""
    return f"{stem}.csv" if course.is_default else f"{stem}-{course.slug}.csv"
