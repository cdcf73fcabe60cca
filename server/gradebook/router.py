"""``/gradebook.csv``: learner, exercise, best score, attempts, solved at (instructors)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from server.deps import InstructorUser, SessionDep
from server.gradebook.service import gradebook_csv
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
