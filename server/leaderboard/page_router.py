"""``GET /leaderboard``: a course's board as an HTML page (the JSON board is ``router``).

Query: ``course=`` (a course the instructor teaches, admins any; a learner, one of theirs; omit for
the most recent one), ``exercise=`` (omit for overall), ``page=`` (1-based) and ``limit=`` (1-200,
default 50). Instructors see names and logins; a learner sees what ``GET /api/v1/leaderboard``
gives them: the exercises released to them, each learner by pseudonym unless the course shows
names, a ``hidden-until-due`` exercise left out until every learner's due date (its own board is
the 403 page). Anyone not logged in gets the login form. A course or exercise that is not there
(or not the viewer's) is a 404; a bad page or limit a 400.

The rows come from ``server.leaderboard.service.board``, the same query as the API's board, so
the page and ``GET /api/v1/leaderboard?course=`` rank the same learners the same way.
"""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from server.catalogue.service import list_exercises
from server.config import Settings
from server.courses.feedback_policy import hidden_board_exercises
from server.courses.page_course import learner_course, most_recent_course
from server.courses.service import taught_course_named
from server.courses.sets import course_exercises, listing
from server.deps import Now, SessionDep, SettingsDep
from server.leaderboard import pages, service
from server.leaderboard.pages import board_url
from server.models import Course, User
from server.security import pseudonym
from server.submissions.waiting import change_mark
from server.web.deps import WebUser
from server.web.errors import PageBadRequest, PageError, PageNotFound
from server.web.responses import html_response, parse_int, teaches, viewer_of

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
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    viewer: WebUser,
    now: Now,
    course: str | None = None,
    exercise: str | None = None,
    page: str | None = None,
    limit: str | None = None,
) -> Response:
    """One course's board: an instructor's (names and logins), or a learner's own course's."""
    page_number = parse_int(page, 1, 1, MAX_OFFSET)
    per_page = parse_int(limit, DEFAULT_LIMIT, 1, MAX_LIMIT)
    if page_number is None or per_page is None or (page_number - 1) * per_page > MAX_OFFSET:
        raise PageBadRequest(viewer, f"page must be 1 or more and limit 1 to {MAX_LIMIT}.")
    if not teaches(session, viewer):
        offset = (page_number - 1) * per_page
        return html_response(
            pages.learner_board_page(_learner_view(request, session, settings, viewer, now, exercise, per_page, offset))
        )
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


def _learner_view(
    request: Request,
    session: Session,
    settings: Settings,
    viewer: User,
    now: datetime,
    exercise: str | None,
    limit: int,
    offset: int,
) -> pages.LearnerBoardView:
    """A learner's board: their course (``?course=``, else their most recent), the exercises
    released to them, the rows ``GET /api/v1/leaderboard`` gives them (``hidden-until-due``
    exercises left out until every due date has passed), named as the course names learners."""
    where = learner_course(request, session, viewer, viewer)
    released = {item.exercise for item in listing(session, where, viewer, now)}
    hidden = hidden_board_exercises(session, viewer, where, now)
    titles = [(s.slug, s.title) for s in list_exercises() if s.slug in released]
    slug = exercise or None
    if slug is not None and slug not in released:
        raise PageNotFound(viewer, f"No exercise is called {slug!r}.")
    if slug in hidden:
        raise PageError(
            403,
            "Scores hidden",
            f"The scores of {slug!r} are hidden until every learner's due date has passed.",
            viewer,
            ("Back to the board", board_url(None, course=where.slug)),
        )
    total, rows = service.board(session, slug, limit, offset, where.id, frozenset(hidden), secret=settings.secret_bytes)
    names = {
        r.user_id: r.display_name if where.board_real_names else pseudonym(r.user_id, settings.secret_bytes, where.id)
        for r in rows
    }
    return pages.LearnerBoardView(
        viewer=viewer_of(viewer, where),
        viewer_id=viewer.id,
        course=(where.slug, where.title),
        exercises=[(s, t) for s, t in titles if s not in hidden],
        held=[t for s, t in titles if s in hidden],
        exercise=slug,
        total=total,
        limit=limit,
        offset=offset,
        rows=rows,
        names=names,
        real_names=where.board_real_names,
    )
