"""``/gradebook.csv`` (learner, exercise, best score, attempts, solved at) and
``/gradebook/wide.csv`` (a row per learner, a column per exercise, for Canvas and Moodle);
instructors only."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from server.deps import InstructorUser, SessionDep
from server.gradebook.service import gradebook_csv, wide_gradebook_csv
from server.openapi import errors

router = APIRouter(tags=["gradebook"])


@router.get(
    "/gradebook.csv",
    response_class=Response,
    responses={
        200: {"content": {"text/csv": {"schema": {"type": "string"}}}, "description": "The gradebook as CSV"},
        **errors(401, 403),
    },
)
def gradebook(_instructor: InstructorUser, session: SessionDep) -> Response:
    """Every learner x every exercise: best score, attempts, when first solved (UTC)."""
    return Response(
        gradebook_csv(session),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": 'attachment; filename="gradebook.csv"'},
    )


@router.get(
    "/gradebook/wide.csv",
    response_class=Response,
    responses={
        200: {"content": {"text/csv": {"schema": {"type": "string"}}}, "description": "The wide gradebook as CSV"},
        **errors(401, 403),
    },
)
def wide_gradebook(_instructor: InstructorUser, session: SessionDep) -> Response:
    """One row per learner, one column per exercise (best score out of 100; empty where never
    attempted), in the layout Canvas's gradebook import expects; Moodle imports it too."""
    return Response(
        wide_gradebook_csv(session),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": 'attachment; filename="gradebook-wide.csv"'},
    )
