"""``GET /leaderboard``: the instructors' board as an HTML page (the JSON board is ``router``).

Query: ``course=`` (a course the instructor teaches, admins any; omit for their most recent course),
``exercise=`` (omit for overall), ``page=`` (1-based) and ``limit=`` (1-200, default 50).
Instructors and admins only: a learner gets the 404 page, anyone not logged in the login form.
A course or exercise that is not there (or, for a course, not the viewer's to teach) is a 404;
a bad page or limit a 400.

The rows come from ``server.leaderboard.service.board``, the same query as the API's board, so
the page and ``GET /api/v1/leaderboard?course=`` rank the same learners the same way.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from server.catalog.service import list_exercises
from server.courses.page_course import most_recent_course
from server.courses.service import taught_course_named
from server.courses.sets import course_exercises
from server.deps import SessionDep, SettingsDep
from server.leaderboard import pages, service
from server.models import Course, User
from server.security import pseudonym
from server.submissions.waiting import change_mark
from server.web.deps import WebInstructor
from server.web.errors import PageBadRequest, PageNotFound
from server.web.responses import html_response, parse_int, viewer_of

router = APIRouter(include_in_schema=False)

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
MAX_OFFSET = 1_000_000  # the API's own bound


def _board_course(session: Session, user: User, slug: str | None) -> Course:
    """The course named by ``?course=`` if ``user`` teaches it; without one, their most recent."""
    if not slug:
        return most_recent_course(session, user)
    course = taught_course_named(session, user, slug)
    if course is None:
        raise PageNotFound(user, "No course by that name that you teach.")
    return course


@router.get("/leaderboard", response_class=HTMLResponse)
def leaderboard_page(
    session: SessionDep,
    settings: SettingsDep,
    viewer: WebInstructor,
    course: str | None = None,
    exercise: str | None = None,
    page: str | None = None,
    limit: str | None = None,
) -> Response:
    """One course's board, for a logged-in instructor."""
    page_number = parse_int(page, 1, 1, MAX_OFFSET)
    per_page = parse_int(limit, DEFAULT_LIMIT, 1, MAX_LIMIT)
    if page_number is None or per_page is None or (page_number - 1) * per_page > MAX_OFFSET:
        raise PageBadRequest(viewer, f"page must be 1 or more and limit 1 to {MAX_LIMIT}.")
    where = _board_course(session, viewer, course)
    published = set(course_exercises(session, where))  # the course's set only
    exercises = [(s.slug, s.title) for s in list_exercises() if s.slug in published]
    slug = exercise or None
    if slug is not None and slug not in {s for s, _ in exercises}:
        raise PageNotFound(viewer, f"No exercise is called {slug!r}.")
    offset = (page_number - 1) * per_page
    total, rows = service.board(session, slug, per_page, offset, where.id, secret=settings.secret_bytes)
    names = None
    if not where.board_real_names:  # the column says what the course's learners see instead
        names = {r.user_id: pseudonym(r.user_id, settings.secret_bytes, where.id) for r in rows}
    view = pages.BoardView(
        viewer=viewer_of(viewer, where),
        exercises=exercises,
        exercise=slug,
        total=total,
        limit=per_page,
        offset=offset,
        rows=rows,
        pseudonyms=names,
        course=(where.slug, where.title),
    )
    return html_response(pages.board_page(view, DEFAULT_LIMIT, mark=change_mark(session, None)))
