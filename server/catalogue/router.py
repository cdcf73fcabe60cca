"""``/exercises``: the catalogue (authentication required)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Response

from server.catalogue import service
from server.catalogue.schemas import ExerciseDetail, ExerciseSummary
from server.catalogue.versions import version_for_user
from server.courses.sets import released_exercises
from server.deps import CurrentUser, Now, SessionDep
from server.openapi import errors

router = APIRouter(prefix="/exercises", tags=["exercises"])


@router.get(
    "",
    response_model=list[ExerciseSummary],
    responses={
        **errors(401),
        304: {"description": "`If-None-Match` names the caller's catalogue as it is now: no body"},
    },
)
def list_exercises(
    user: CurrentUser,
    session: SessionDep,
    now: Now,
    response: Response,
    if_none_match: Annotated[str | None, Header(alias="If-None-Match", max_length=256)] = None,
) -> list[ExerciseSummary] | Response:
    """The exercises, in catalogue order. A learner enrolled in courses sees those released
    in one of them (``GET /courses/{course}/exercises`` has the dates). The ``ETag`` is this
    caller's catalogue version (``POST /submissions?catalogue=`` checks a match against it); a
    request whose ``If-None-Match`` names it is answered 304 without a body."""
    found = service.visible_exercises(released_exercises(session, user, now))
    etag = f'"{service.catalogue_version(found)}"'
    if if_none_match is not None and etag in (tag.strip() for tag in if_none_match.split(",")):
        return Response(status_code=304, headers={"ETag": etag})
    response.headers["ETag"] = etag
    return found


@router.get("/{slug}", response_model=ExerciseDetail, responses=errors(401, 404))
def read_exercise(slug: str, user: CurrentUser, session: SessionDep, now: Now) -> ExerciseDetail:
    """One exercise with its description and starter template (at the version the caller's
    courses serve); 404 ``ExerciseNotFound``, also for a learner to whom none of their courses
    has released it yet (its description, starter and check names are not theirs to read before
    then, and the answer does not say it exists)."""
    version = version_for_user(session, user.id, slug) if len(slug) <= 64 else None
    return service.exercise_detail(slug, released_exercises(session, user, now), version)
