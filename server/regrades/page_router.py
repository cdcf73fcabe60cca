"""``/dashboard/regrades/{id}``: one regrade set's diff, for instructors (a learner gets the
404 page, as for any page that is not theirs; another course's instructor too)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response

from server.deps import SessionDep
from server.errors import RegradeNotFound
from server.models import Course
from server.regrades.pages import regrade_page
from server.regrades.service import readable_set
from server.regrades.views import diff_public
from server.web.deps import WebInstructor
from server.web.errors import PageNotFound
from server.web.responses import html_response, parse_int, viewer_of

router = APIRouter(include_in_schema=False)


@router.get("/dashboard/regrades/{set_id}", response_class=HTMLResponse)
def regrade(set_id: str, session: SessionDep, user: WebInstructor) -> Response:
    """The set's state and diff."""
    number = parse_int(set_id, 0, 1, 2**31 - 1)
    try:
        found = readable_set(session, number, user) if number else None
    except RegradeNotFound:
        found = None
    if found is None:
        raise PageNotFound(user)
    session.commit()
    # Its times in its course's zone (a set over every course, an admin's: UTC, which they say).
    course = session.get(Course, found.course_id) if found.course_id is not None else None
    return html_response(regrade_page(viewer_of(user, course), diff_public(session, found)))
