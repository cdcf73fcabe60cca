"""``/dashboard/similarity``: the similarity pages, for the course's instructors only.

- ``GET /dashboard/similarity?course=&exercise=``: the top pairs of the newest finished run,
  a "Compare now" button, one link per exercise to rank by it alone.
- ``POST /dashboard/similarity/run`` (form: ``course``): request a run; 303 back.
- ``GET /dashboard/similarity/{a}/{b}?course=``: both files per exercise side by side, the
  matching lines marked, links to both learners' pages, the review buttons.
- ``POST /dashboard/similarity/{a}/{b}/review`` (form: ``course``, ``mark``): 303 back.

The forms are protected like the dashboard's others: the session cookie is SameSite=Strict,
and a post whose ``Origin`` is another site is refused (403). A learner gets the same 404
as for a page that does not exist. The course is ``?course=`` or the one the dashboard
remembers (its cookie), else the default course.
"""

from __future__ import annotations

from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy import select
from sqlalchemy.orm import Session

from server.courses.service import taught_course_ids
from server.deps import SessionDep, SettingsDep, StateDep
from server.errors import UserNotFound
from server.models import DEFAULT_COURSE_ID, Course, ReviewMark, User
from server.similarity import pages, service
from server.similarity.views import pair_public, run_public, side_by_side
from server.web import html
from server.web.responses import FormFields, bad_request, gate, html_response, not_found, redirect, same_origin, viewer_of

router = APIRouter(include_in_schema=False)

#: The dashboard's remembered course (server.web.dashboard_router sets it).
COURSE_COOKIE = "ppo_course"
SHOWN_PAIRS = 50


def _course(session: Session, user: User, asked: str | None, remembered: str | None) -> Course | None:
    """The course asked for (or remembered) if ``user`` teaches it, else the default course;
    None when a course was asked for by name and is not theirs."""
    taught = taught_course_ids(session, user)
    slug = asked or remembered
    course = session.scalar(select(Course).where(Course.slug == slug[:64])) if slug else None
    if course is not None and (taught is None or course.id in taught):
        return course
    return None if asked else session.get(Course, DEFAULT_COURSE_ID)


def _refused(user: User) -> HTMLResponse:
    return html_response(html.message_page("Cross-site request refused", "Use the buttons on this site's own pages.", viewer_of(user)), 403)


@router.get("/dashboard/similarity", response_class=HTMLResponse)
def list_page(request: Request, session: SessionDep, settings: SettingsDep, exercise: str | None = None) -> Response:
    """The course's top pairs."""
    user = gate(request, session, settings, instructors_only=True)
    if isinstance(user, Response):
        return user
    course = _course(session, user, request.query_params.get("course"), request.cookies.get(COURSE_COOKIE))
    if course is None:
        return not_found(user, "No course by that name that you teach.")
    shown = service.latest_done_run(session, course)
    if exercise is not None and (shown is None or exercise not in shown.summary.get("exercises", [])):
        return bad_request(user, f"{exercise[:64]!r} is not one of the exercises compared.")
    pairs = [] if shown is None else [pair_public(p) for p in service.ranked_pairs(session, shown, exercise, SHOWN_PAIRS)]
    body = pages.list_page(viewer_of(user), (course.slug, course.title), run_public(service.latest_run(session, course)),
                           run_public(shown), pairs, exercise)
    return html_response(body)


@router.post("/dashboard/similarity/run")
def request_run(request: Request, form: FormFields, session: SessionDep, settings: SettingsDep, state: StateDep) -> Response:
    """Ask for a run now (one already waiting is kept)."""
    user = gate(request, session, settings, instructors_only=True)
    if isinstance(user, Response):
        return user
    if not same_origin(request):
        return _refused(user)
    course = _course(session, user, (form or {}).get("course") or None, None)
    if course is None:
        return not_found(user, "No course by that name that you teach.")
    queue = state.similarity
    run, new = service.request_run(session, course, requested_by=user, now=state.clock(),
                                   defer=queue.defer if queue is not None else service.no_defer)
    session.commit()
    if new and queue is not None:
        queue.enqueue(run.id)
    return redirect(f"{pages.LIST_PATH}?{urlencode({'course': course.slug})}")


def _pair(session: Session, user: User, course: Course, a: str, b: str) -> tuple[User, User] | HTMLResponse:
    try:
        return service.ordered(session, course, a[:64], b[:64])
    except UserNotFound:
        return not_found(user)


@router.get("/dashboard/similarity/{a}/{b}", response_class=HTMLResponse)
def pair_page(a: str, b: str, request: Request, session: SessionDep, settings: SettingsDep) -> Response:
    """One pair side by side."""
    user = gate(request, session, settings, instructors_only=True)
    if isinstance(user, Response):
        return user
    course = _course(session, user, request.query_params.get("course"), request.cookies.get(COURSE_COOKIE))
    if course is None:
        return not_found(user, "No course by that name that you teach.")
    found = _pair(session, user, course, a, b)
    if isinstance(found, HTMLResponse):
        return found
    run = service.latest_done_run(session, course)
    stored = None if run is None else service.stored_pair(session, run, *found)
    if run is None or stored is None:
        return not_found(user, "The newest similarity run kept no such pair.")
    ranked = next(p for p in service.ranked_pairs(session, run) if p.pair.id == stored.id)
    body = pages.pair_page(viewer_of(user), (course.slug, course.title), pair_public(ranked), side_by_side(session, stored))
    return html_response(body)


@router.post("/dashboard/similarity/{a}/{b}/review")
def review(a: str, b: str, request: Request, form: FormFields, session: SessionDep, settings: SettingsDep) -> Response:
    """Mark the pair reviewed: fine or concern."""
    user = gate(request, session, settings, instructors_only=True)
    if isinstance(user, Response):
        return user
    if not same_origin(request):
        return _refused(user)
    fields = form or {}
    course = _course(session, user, fields.get("course") or None, None)
    if course is None:
        return not_found(user, "No course by that name that you teach.")
    if fields.get("mark") not in ("fine", "concern"):
        return bad_request(user, "Choose 'fine' or 'concern'.")
    found = _pair(session, user, course, a, b)
    if isinstance(found, HTMLResponse):
        return found
    service.review(session, course, *found, ReviewMark(fields["mark"]), user)
    session.commit()
    return redirect(pages.pair_url(course.slug, found[0].name, found[1].name))
