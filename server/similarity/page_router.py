"""``/dashboard/similarity``: the similarity pages, for the course's instructors only.

- ``GET /dashboard/similarity?course=&exercise=``: the top pairs of the newest finished run,
  a "Compare now" button, one link per exercise to rank by it alone.
- ``POST /dashboard/similarity/run`` (form: ``course``): request a run; 303 back.
- ``GET /dashboard/similarity/{a}/{b}?course=``: both files per exercise side by side, the
  matching lines marked, links to both learners' pages, the review buttons.
- ``POST /dashboard/similarity/{a}/{b}/review`` (form: ``course``, ``mark``): 303 back.

Pages authorize with ``WebInstructor`` (a learner gets the 404 page) and show the dashboard's
course (``DashboardCourse``: ``?course=``, else the one picked before). The forms are guarded
like the dashboard's others: the session cookie is SameSite=Strict, and a post whose ``Origin``
is another site is refused (403); they name their course in a field, checked the same way.
"""

from __future__ import annotations

from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from server.courses.page_course import DashboardCourse
from server.courses.service import default_course, taught_course_ids, taught_course_named
from server.deps import SessionDep, StateDep
from server.errors import UserNotFound
from server.models import Course, ReviewMark, User
from server.similarity import pages, service
from server.similarity.views import pair_public, run_public, side_by_side
from server.web.deps import WebInstructor
from server.web.errors import PageBadRequest, PageError, PageNotFound
from server.web.responses import FormFields, html_response, redirect, same_origin, viewer_of

router = APIRouter(include_in_schema=False)

LISTED_PAIRS = 50


def _posted_course(session: Session, user: User, fields: dict[str, str]) -> Course:
    """The course a form names, if ``user`` teaches it (no field: the default course)."""
    slug = fields.get("course") or None
    if slug is None:
        default = default_course(session)
        taught = taught_course_ids(session, user)
        if taught is not None and default.id not in taught:  # staff of their LMS courses only
            raise PageNotFound(user, "No course by that name that you teach.")
        return default
    course = taught_course_named(session, user, slug[:64])
    if course is None:
        raise PageNotFound(user, "No course by that name that you teach.")
    return course


def _same_site(request: Request, user: User) -> None:
    if not same_origin(request):
        raise PageError(403, "Cross-site request refused", "Use the buttons on this site's own pages.", user)


def _pair(session: Session, user: User, course: Course, a: str, b: str) -> tuple[User, User]:
    try:
        return service.ordered(session, course, a[:64], b[:64])
    except UserNotFound:
        raise PageNotFound(user) from None


@router.get("/dashboard/similarity", response_class=HTMLResponse)
def list_page(
    request: Request,
    session: SessionDep,
    user: WebInstructor,
    page_course: DashboardCourse,
    exercise: str | None = None,
) -> Response:
    """The course's top pairs."""
    course = page_course.course
    latest, run = service.newest_runs(session, course)
    if exercise is not None and (run is None or exercise not in run.summary.get("exercises", [])):
        raise PageBadRequest(user, f"{exercise[:64]!r} is not one of the exercises compared.")
    pairs = [] if run is None else [pair_public(p) for p in service.ranked_pairs(session, run, exercise, LISTED_PAIRS)]
    body = pages.list_page(
        viewer_of(user, course),
        (course.slug, course.title),
        run_public(latest),
        run_public(run),
        pairs,
        exercise,
    )
    return page_course.remember(html_response(body), request)


@router.post("/dashboard/similarity/run")
def request_run(
    request: Request, form: FormFields, session: SessionDep, user: WebInstructor, state: StateDep
) -> Response:
    """Ask for a run now (one already waiting is kept)."""
    _same_site(request, user)
    course = _posted_course(session, user, form or {})
    queue = state.similarity
    run, new = service.request_run(
        session,
        course,
        requested_by=user,
        now=state.clock(),
        defer=queue.defer if queue is not None else service.no_defer,
    )
    session.commit()
    if new and queue is not None:
        queue.enqueue(run.id)
    return redirect(f"{pages.LIST_PATH}?{urlencode({'course': course.slug})}")


@router.get("/dashboard/similarity/{a}/{b}", response_class=HTMLResponse)
def pair_page(
    a: str, b: str, request: Request, session: SessionDep, user: WebInstructor, page_course: DashboardCourse
) -> Response:
    """One pair side by side."""
    course = page_course.course
    first, second = _pair(session, user, course, a, b)
    run = service.latest_done_run(session, course)
    stored = None if run is None else service.stored_pair(session, run, first, second)
    if run is None or stored is None:
        raise PageNotFound(user, "The newest similarity run kept no such pair.")
    ranked = next(p for p in service.ranked_pairs(session, run) if p.pair.id == stored.id)
    body = pages.pair_page(
        viewer_of(user, course), (course.slug, course.title), pair_public(ranked), side_by_side(session, stored)
    )
    return page_course.remember(html_response(body), request)


@router.post("/dashboard/similarity/{a}/{b}/review")
def review(a: str, b: str, request: Request, form: FormFields, session: SessionDep, user: WebInstructor) -> Response:
    """Mark the pair reviewed: fine or concern."""
    _same_site(request, user)
    fields = form or {}
    course = _posted_course(session, user, fields)
    if fields.get("mark") not in ("fine", "concern"):
        raise PageBadRequest(user, "Choose 'fine' or 'concern'.")
    first, second = _pair(session, user, course, a, b)
    service.review(session, course, first, second, ReviewMark(fields["mark"]), user)
    session.commit()
    return redirect(pages.pair_url(course.slug, first.name, second.name))
