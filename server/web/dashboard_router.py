"""``/dashboard``: the class at a glance, for instructors; a learner's own work, for learners.

All pages need the web session (``POST /login``); without it they show the login form and
come back afterwards. Instructors and admins see everything; a learner sees their own
learner page and their own submissions, and gets the same 404 for anything else as for
what does not exist.

- ``GET /dashboard``: the class (a learner is sent to their own page).
- ``GET /dashboard/exercises/{slug}``: charts of one exercise.
- ``GET /dashboard/exercises/{slug}/misconception?name=``: who hit one misconception.
- ``GET /dashboard/learners``: every learner; ``/dashboard/learners/{login}``: one.
- ``GET /dashboard/submissions/{id}``: one submission, its feedback and source.
- ``GET /dashboard/live``: ``{"mark": ...}``, which changes when a submission the viewer can
  see is added or finished; ``/static/live.js`` polls it and reloads the page.
- ``GET /dashboard/gradebook.csv``, ``/dashboard/gradebook-wide.csv``: the gradebooks, for
  the browser (the API has them for bearer tokens).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from sqlalchemy.orm import Session

from server.catalog.service import list_exercises
from server.courses.service import may_read_learner, taught_course_ids
from server.dashboard import service
from server.deps import SessionDep, SettingsDep
from server.gradebook.service import gradebook_csv, wide_gradebook_csv
from server.models import Role, User
from server.web import dashboard_pages as pages
from server.web.responses import (
    SECURITY_HEADERS,
    bad_request,
    gate,
    html_response,
    not_found,
    parse_int,
    redirect,
    viewer_of,
)
from server.web.session import COOKIE_NAME, user_for_cookie
from server.web.urls import learner_url

router = APIRouter(include_in_schema=False)

LEARNERS_PER_PAGE = 100
SUBMISSIONS_PER_PAGE = 50
MAX_PAGE = 100_000
MAX_ID = 2**31 - 1
_LIVE_SCRIPT = (Path(__file__).parent / "static" / "live.js").read_bytes()


def _titles() -> dict[str, str]:
    return {x.slug: x.title for x in list_exercises()}


@router.get("/dashboard", response_class=HTMLResponse)
def class_page(request: Request, session: SessionDep, settings: SettingsDep) -> Response:
    """The class: every exercise and its most common misconception."""
    user = gate(request, session, settings, instructors_only=False)
    if isinstance(user, Response):
        return user
    if not Role(user.role).reads_everything:
        return redirect(learner_url(user.name))
    titles = _titles()
    lines, misconceptions = service.class_overview(session, list(titles))
    mark = service.change_mark(session, None)
    return html_response(pages.class_page(viewer_of(user), titles, lines, misconceptions, mark=mark))


@router.get("/dashboard/exercises/{slug}", response_class=HTMLResponse)
def exercise_page(slug: str, request: Request, session: SessionDep, settings: SettingsDep) -> Response:
    """One exercise's charts."""
    user = gate(request, session, settings, instructors_only=True)
    if isinstance(user, Response):
        return user
    titles = _titles()
    if slug not in titles:
        return not_found(user, f"No exercise is called {slug!r}.")
    view = service.exercise_view(session, slug)
    mark = service.change_mark(session, None)
    return html_response(pages.exercise_page(viewer_of(user), slug, titles[slug], view, mark=mark))


@router.get("/dashboard/exercises/{slug}/misconception", response_class=HTMLResponse)
def misconception_page(slug: str, request: Request, session: SessionDep, settings: SettingsDep, name: str = "") -> Response:
    """The learners who hit one misconception of one exercise."""
    user = gate(request, session, settings, instructors_only=True)
    if isinstance(user, Response):
        return user
    titles = _titles()
    if slug not in titles:
        return not_found(user, f"No exercise is called {slug!r}.")
    if not name or len(name) > 2000:
        return bad_request(user, "Name a misconception (name=...), as the exercise page's bars do.")
    holders = service.misconception_holders(session, slug, name)
    mark = service.change_mark(session, None)
    return html_response(pages.misconception_page(viewer_of(user), slug, titles[slug], name, holders, mark=mark))


@router.get("/dashboard/learners", response_class=HTMLResponse)
def learners_page(request: Request, session: SessionDep, settings: SettingsDep, page: str | None = None) -> Response:
    """Every learner, by login."""
    user = gate(request, session, settings, instructors_only=True)
    if isinstance(user, Response):
        return user
    number = parse_int(page, 1, 1, MAX_PAGE)
    if number is None:
        return bad_request(user, "page must be a whole number, 1 or more.")
    total, lines = service.learners(session, LEARNERS_PER_PAGE, (number - 1) * LEARNERS_PER_PAGE)
    mark = service.change_mark(session, None)
    return html_response(pages.learners_page(viewer_of(user), total, lines, number, LEARNERS_PER_PAGE, mark=mark))


@router.get("/dashboard/learners/{name}", response_class=HTMLResponse)
def learner_page(name: str, request: Request, session: SessionDep, settings: SettingsDep, page: str | None = None) -> Response:
    """One learner's exercises and submissions: their own, or anyone's for instructors."""
    user = gate(request, session, settings, instructors_only=False)
    if isinstance(user, Response):
        return user
    instructor = Role(user.role).reads_everything
    owner = user if name == user.name else (service.learner_by_name(session, name) if instructor else None)
    if owner is None or not may_read_learner(session, user, owner):  # courses: only the ones they teach
        return not_found(user)
    number = parse_int(page, 1, 1, MAX_PAGE)
    if number is None:
        return bad_request(user, "page must be a whole number, 1 or more.")
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
def submission_page(submission_id: str, request: Request, session: SessionDep, settings: SettingsDep) -> Response:
    """One submission: the learner's own, or anyone's for instructors."""
    user = gate(request, session, settings, instructors_only=False)
    if isinstance(user, Response):
        return user
    number = parse_int(submission_id, 0, 1, MAX_ID)
    submission = service.submission_with_checks(session, number) if number else None
    instructor = Role(user.role).reads_everything
    if submission is None or (submission.user_id != user.id and not _teaches(session, user, submission.course_id)):
        return not_found(user)
    mark = service.change_mark(session, None if instructor else user.id)
    title = _titles().get(submission.exercise, submission.exercise)
    return html_response(pages.submission_page(viewer_of(user), title, submission, mark=mark))


@router.get("/dashboard/live")
def live(request: Request, session: SessionDep, settings: SettingsDep) -> Response:
    """The viewer's change mark: the class's for instructors, their own for learners."""
    user = user_for_cookie(session, request.cookies.get(COOKIE_NAME), settings.secret_bytes)
    if user is None:
        return JSONResponse({"error": "NotAuthenticated", "detail": "Log in again."}, status_code=401, headers=SECURITY_HEADERS)
    scope = None if Role(user.role).reads_everything else user.id
    return JSONResponse({"mark": service.change_mark(session, scope)}, headers=SECURITY_HEADERS)


@router.get("/static/live.js")
def live_script() -> Response:
    """The pages' one script (same origin, so ``script-src 'self'`` allows it)."""
    return Response(
        _LIVE_SCRIPT,
        media_type="text/javascript; charset=utf-8",
        headers={"Cache-Control": "public, max-age=300", "X-Content-Type-Options": "nosniff"},
    )


def _csv(body: str, filename: str) -> Response:
    return Response(
        body, media_type="text/csv; charset=utf-8",
        headers={**SECURITY_HEADERS, "Content-Disposition": f'attachment; filename="{filename}"'},
    )


@router.get("/dashboard/gradebook.csv")
def gradebook(request: Request, session: SessionDep, settings: SettingsDep) -> Response:
    """The long gradebook, for a logged-in instructor."""
    user = gate(request, session, settings, instructors_only=True)
    return user if isinstance(user, Response) else _csv(gradebook_csv(session), "gradebook.csv")


@router.get("/dashboard/gradebook-wide.csv")
def wide_gradebook(request: Request, session: SessionDep, settings: SettingsDep) -> Response:
    """The wide gradebook (Canvas and Moodle), for a logged-in instructor."""
    user = gate(request, session, settings, instructors_only=True)
    return user if isinstance(user, Response) else _csv(wide_gradebook_csv(session), "gradebook-wide.csv")


def _teaches(session: Session, user: User, course_id: int) -> bool:
    """An instructor reads the submissions of the courses they teach (admins: all)."""
    taught = taught_course_ids(session, user)
    return taught is None or course_id in taught
