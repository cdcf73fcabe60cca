"""``/dashboard``: the class at a glance, for instructors; a learner's own work, for learners.

All pages need the web session (``POST /login``); without it they show the login form and
come back afterwards. Instructors and admins see everything; a learner sees their own
learner page and their own submissions, and gets the same 404 for anything else as for
what does not exist. Each route says who may see it with a dependency (``WebUser``,
``WebInstructor`` from ``server.web.deps``; ``DashboardCourse``, an instructor's course).

- ``GET /dashboard``: the class (a learner is sent to their own page).
- ``GET /dashboard/exercises/{slug}``: charts of one exercise.
- ``GET /dashboard/exercises/{slug}/misconception?name=``: who hit one misconception.
- ``GET /dashboard/learners``: every learner; ``/dashboard/learners/{login}``: one.
- ``GET /dashboard/submissions/{id}``: one submission, its feedback and source.
- ``GET /dashboard/live``: ``{"mark": ...}``, which changes when a submission the viewer can
  see is added or finished; ``/static/live.js`` polls it and reloads the page.
- ``GET /dashboard/gradebook.csv``, ``/dashboard/gradebook-wide.csv``: the gradebooks, for
  the browser (the API has them for bearer tokens).

The class pages and gradebooks are per course: ``?course=<slug>`` picks one of the courses the
instructor teaches (admins: any) and is remembered in a cookie for the next pages; without it,
the default course (``server.dashboard.deps``).
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from sqlalchemy import select
from sqlalchemy.orm import Session

from server.catalog.service import list_exercises
from server.courses.service import may_read_learner, taught_course_ids
from server.dashboard import pages, service
from server.dashboard.deps import DashboardCourse, ShownCourse, shown_course
from server.deps import SessionDep, SettingsDep
from server.gradebook.service import gradebook_csv, wide_gradebook_csv
from server.models import DEFAULT_COURSE_ID, Course, Role, User
from server.web.deps import WebInstructor, WebUser
from server.web.errors import PageBadRequest, PageNotFound
from server.web.responses import SECURITY_HEADERS, html_response, parse_int, redirect, viewer_of
from server.web.session import COOKIE_NAME, user_for_cookie
from server.web.urls import learner_url

router = APIRouter(include_in_schema=False)

LEARNERS_PER_PAGE = 100
SUBMISSIONS_PER_PAGE = 50
MAX_PAGE = 100_000
MAX_ID = 2**31 - 1


def _courses(session: Session, user: User) -> list[tuple[str, str]]:
    """(slug, title) of every course the viewer may pick."""
    taught = taught_course_ids(session, user)
    query = select(Course.slug, Course.title).order_by(Course.id)
    if taught is not None:
        query = query.where(Course.id.in_(taught))
    return [(slug, title) for slug, title in session.execute(query).tuples()]


def _course_title(title: str, course: Course) -> str:
    return title if course.id == DEFAULT_COURSE_ID else f"{title} ({course.title})"


def _titles() -> dict[str, str]:
    return {x.slug: x.title for x in list_exercises()}


def _exercise_titles(user: User, slug: str) -> dict[str, str]:
    """Every exercise's title; ``PageNotFound`` when ``slug`` is not one of them."""
    titles = _titles()
    if slug not in titles:
        raise PageNotFound(user, f"No exercise is called {slug!r}.")
    return titles


@router.get("/dashboard", response_class=HTMLResponse)
def class_page(request: Request, session: SessionDep, user: WebUser) -> Response:
    """The class: every exercise and its most common misconception (a learner goes to their own page)."""
    if not Role(user.role).reads_everything:
        return redirect(learner_url(user.name))
    shown = shown_course(request, session, user)  # after the redirect: a learner has no course to pick
    course = shown.course
    titles = _titles()
    lines, misconceptions = service.class_overview(session, list(titles), course.id)
    mark = service.change_mark(session, None)
    body = pages.class_page(viewer_of(user), titles, lines, misconceptions, mark=mark,
                            course=(course.slug, course.title), courses=_courses(session, user))
    return shown.remember(html_response(body), request)


@router.get("/dashboard/exercises/{slug}", response_class=HTMLResponse)
def exercise_page(slug: str, request: Request, session: SessionDep, user: WebInstructor, shown: DashboardCourse) -> Response:
    """One exercise's charts."""
    titles = _exercise_titles(user, slug)
    view = service.exercise_view(session, slug, shown.course.id)
    mark = service.change_mark(session, None)
    body = pages.exercise_page(viewer_of(user), slug, _course_title(titles[slug], shown.course), view, mark=mark)
    return shown.remember(html_response(body), request)


@router.get("/dashboard/exercises/{slug}/misconception", response_class=HTMLResponse)
def misconception_page(
    slug: str, request: Request, session: SessionDep, user: WebInstructor, shown: DashboardCourse, name: str = ""
) -> Response:
    """The learners who hit one misconception of one exercise."""
    titles = _exercise_titles(user, slug)
    if not name or len(name) > 2000:
        raise PageBadRequest(user, "Name a misconception (name=...), as the exercise page's bars do.")
    holders = service.misconception_holders(session, slug, name, shown.course.id)
    mark = service.change_mark(session, None)
    title = _course_title(titles[slug], shown.course)
    body = pages.misconception_page(viewer_of(user), slug, title, name, holders, mark=mark)
    return shown.remember(html_response(body), request)


@router.get("/dashboard/learners", response_class=HTMLResponse)
def learners_page(
    request: Request, session: SessionDep, user: WebInstructor, shown: DashboardCourse, page: str | None = None
) -> Response:
    """Every learner of the course, by login."""
    number = parse_int(page, 1, 1, MAX_PAGE)
    if number is None:
        raise PageBadRequest(user, "page must be a whole number, 1 or more.")
    offset = (number - 1) * LEARNERS_PER_PAGE
    total, lines = service.learners(session, LEARNERS_PER_PAGE, offset, shown.course.id)
    mark = service.change_mark(session, None)
    body = pages.learners_page(viewer_of(user), total, lines, number, LEARNERS_PER_PAGE, mark=mark)
    return shown.remember(html_response(body), request)


@router.get("/dashboard/learners/{name}", response_class=HTMLResponse)
def learner_page(name: str, session: SessionDep, user: WebUser, page: str | None = None) -> Response:
    """One learner's exercises and submissions: their own, or anyone's for instructors."""
    instructor = Role(user.role).reads_everything
    owner = user if name == user.name else (service.learner_by_name(session, name) if instructor else None)
    if owner is None or not may_read_learner(session, user, owner):  # courses: only the ones they teach
        raise PageNotFound(user)
    number = parse_int(page, 1, 1, MAX_PAGE)
    if number is None:
        raise PageBadRequest(user, "page must be a whole number, 1 or more.")
    titles = _titles()
    view = pages.LearnerView(
        name=owner.name,
        display_name=owner.display_name,
        exercises=service.learner_exercises(session, owner.id, list(titles)),
        submissions=service.recent_submissions(
            session, user_id=owner.id, limit=SUBMISSIONS_PER_PAGE, offset=(number - 1) * SUBMISSIONS_PER_PAGE
        ),
        total_submissions=service.count_submissions(session, owner.id),
        page_number=number,
        per_page=SUBMISSIONS_PER_PAGE,
    )
    mark = service.change_mark(session, None if instructor else user.id)
    return html_response(pages.learner_page(viewer_of(user), titles, view, mark=mark))


@router.get("/dashboard/submissions/{submission_id}", response_class=HTMLResponse)
def submission_page(submission_id: str, session: SessionDep, user: WebUser) -> Response:
    """One submission: the learner's own, or anyone's for instructors."""
    number = parse_int(submission_id, 0, 1, MAX_ID)
    submission = service.submission_with_checks(session, number) if number else None
    if submission is None or (submission.user_id != user.id and not _teaches(session, user, submission.course_id)):
        raise PageNotFound(user)
    mark = service.change_mark(session, None if Role(user.role).reads_everything else user.id)
    title = _titles().get(submission.exercise, submission.exercise)
    return html_response(pages.submission_page(viewer_of(user), title, submission, mark=mark))


@router.get("/dashboard/live")
def live(request: Request, session: SessionDep, settings: SettingsDep) -> Response:
    """The viewer's change mark: the class's for instructors, their own for learners. JSON for
    ``/static/live.js``, so no session is a JSON 401, not the login form."""
    user = user_for_cookie(session, request.cookies.get(COOKIE_NAME), settings.secret_bytes)
    if user is None:
        return JSONResponse({"error": "NotAuthenticated", "detail": "Log in again."}, status_code=401, headers=SECURITY_HEADERS)
    scope = None if Role(user.role).reads_everything else user.id
    return JSONResponse({"mark": service.change_mark(session, scope)}, headers=SECURITY_HEADERS)


def _csv(body: str, filename: str) -> Response:
    return Response(
        body, media_type="text/csv; charset=utf-8",
        headers={**SECURITY_HEADERS, "Content-Disposition": f'attachment; filename="{filename}"'},
    )


@router.get("/dashboard/gradebook.csv")
def gradebook(session: SessionDep, shown: DashboardCourse) -> Response:
    """The long gradebook of the course shown, for a logged-in instructor."""
    return _gradebook(session, shown, gradebook_csv, "gradebook")


@router.get("/dashboard/gradebook-wide.csv")
def wide_gradebook(session: SessionDep, shown: DashboardCourse) -> Response:
    """The wide gradebook (Canvas and Moodle) of the course shown, for a logged-in instructor."""
    return _gradebook(session, shown, wide_gradebook_csv, "gradebook-wide")


def _gradebook(session: Session, shown: ShownCourse, make: Callable[..., str], name: str) -> Response:
    course = shown.course
    suffix = "" if course.id == DEFAULT_COURSE_ID else f"-{course.slug}"
    return _csv(make(session, course), f"{name}{suffix}.csv")


def _teaches(session: Session, user: User, course_id: int) -> bool:
    """An instructor reads the submissions of the courses they teach (admins: all)."""
    taught = taught_course_ids(session, user)
    return taught is None or course_id in taught
