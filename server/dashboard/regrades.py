"""``/dashboard/regrades``: a course's regrade sets in the browser, for its staff (instructors and
TAs); a learner gets the 404 of any staff page, another course's staff the 404 of a set that
is not theirs.

- ``GET /dashboard/regrades?course=``: the course's sets, newest first, its stale verdicts, and
  the preview form; ``POST /dashboard/regrades``: a preview (a new set, graded behind live
  submissions), then 303 to its page.
- ``GET /dashboard/regrades/{id}?course=&keep=``: one set, its diff (as an apply with ``keep``
  would leave it) and, while it is open, the apply form (the reason learners read, the keep
  rule) and the cancel button; ``POST .../apply`` and ``POST .../cancel``.

Every form carries the session's form token beside the ``Origin`` check (``staff_form_course``)
and names its course; a set is acted on from its own course's page only (a set over every
course, made at the terminal, shows the commands instead). What a preview chooses, what an
apply changes and the audit log's rows are ``server.regrades``'s alone: the same
``create_preview``, ``apply_set`` and ``cancel`` as ``ppo-grader regrade`` and ``/api/v1/regrades``.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from server.catalogue.service import list_exercises
from server.courses.page_course import DashboardCourse
from server.courses.sets import course_exercises
from server.dashboard.staff_forms import staff_form_course
from server.deps import SessionDep, SettingsDep, StateDep
from server.errors import GraderError, RegradeNotFound
from server.models import Course, Keep, RegradeSet, User
from server.regrades import service
from server.regrades.apply import REASON_CHARS, apply_set
from server.regrades.pages import regrade_page, regrades_page
from server.regrades.views import diff_public, regrade_public
from server.text_guard import display_text, is_storable_text, printable_text
from server.users.service import managed_user
from server.web.deps import WebInstructor
from server.web.errors import PageError, PageNotFound
from server.web.responses import FormFields, html_response, parse_int, redirect, viewer_of
from server.web.session import COOKIE_NAME, form_token
from server.web.urls import REGRADES, in_course, regrade_url

router = APIRouter(include_in_schema=False)

MAX_ID = 2**31 - 1


def _csrf(request: Request, secret: bytes) -> str:
    return form_token(request.cookies.get(COOKIE_NAME) or "", secret)


def _list_page(
    session: Session,
    request: Request,
    user: User,
    course: Course,
    secret: bytes,
    error: str = "",
    sent: dict[str, str] | None = None,
) -> str:
    published = set(course_exercises(session, course))
    exercises = [(x.slug, x.title) for x in list_exercises() if x.slug in published]
    sets = [regrade_public(session, r) for r in service.list_sets(session, user, course_id=course.id)]
    stale = [line for line in service.stale_lines(session, {course.id}) if line.stale]
    return regrades_page(
        viewer_of(user, course), course.slug, sets, stale, exercises, _csrf(request, secret), error=error, sent=sent
    )


@router.get(REGRADES, response_class=HTMLResponse)
def regrades(
    request: Request, session: SessionDep, settings: SettingsDep, user: WebInstructor, page_course: DashboardCourse
) -> Response:
    """The course's sets and the preview form."""
    body = _list_page(session, request, user, page_course.course, settings.secret_bytes)
    session.commit()
    return page_course.remember(html_response(body), request)


@router.post(REGRADES)
def preview(
    request: Request, form: FormFields, session: SessionDep, settings: SettingsDep, state: StateDep, user: WebInstructor
) -> Response:
    """Grade the chosen stored submissions of the course again into a new set."""
    fields = form or {}
    course = staff_form_course(request, fields, session, settings.secret_bytes, user, "regrades")

    def refused(status: int, text: str) -> Response:
        session.rollback()
        body = _list_page(session, request, user, course, settings.secret_bytes, error=text, sent=fields)
        return html_response(body, status_code=status)

    exercise = (fields.get("exercise") or "")[:64]
    if exercise not in course_exercises(session, course):
        return refused(404, f"There is no exercise {exercise!r} in the course {course.title!r}.")
    submission = parse_int((fields.get("submission") or "").strip(), 0, 1, MAX_ID)
    if submission is None:
        return refused(400, f"A submission is a number from 1 to {MAX_ID} (or leave it empty).")
    learner_name = (fields.get("learner") or "").strip()
    if learner_name and printable_text(learner_name, 64) is None:
        return refused(400, "A learner is named by their login (at most 64 characters, no control character).")
    try:
        learner = managed_user(session, None, learner_name) if learner_name else None
        regrade, ids = service.create_preview(
            session,
            exercise=exercise,
            course=course,
            learner=learner,
            submission_id=submission or None,
            all_versions=fields.get("all_versions") == "1",
            requested_by=user,
            defer=state.queue.defer_regrade,
        )
    except GraderError as exc:  # the CLI's and the API's refusals, in their words
        return refused(exc.status_code, exc.detail)
    session.commit()
    state.queue.enqueue_regrades(ids)
    return redirect(regrade_url(regrade.id, course.slug))


def _set_of(session: Session, user: User, set_id: str | int) -> RegradeSet:
    """The set if ``user`` may read it; the 404 page otherwise (a learner, another course's staff)."""
    number = parse_int(str(set_id), 0, 1, MAX_ID)
    try:
        if number:
            return service.readable_set(session, number, user)
    except RegradeNotFound:
        pass
    raise PageNotFound(user)


def _set_page(
    session: Session,
    request: Request,
    user: User,
    regrade: RegradeSet,
    secret: bytes,
    *,
    keep: Keep = Keep.NEW,
    notice: str = "",
    error: str = "",
) -> str:
    # Its times in its course's zone (a set over every course, an admin's: UTC, which they say).
    course = session.get(Course, regrade.course_id) if regrade.course_id is not None else None
    return regrade_page(
        viewer_of(user, course),
        diff_public(session, regrade, keep),
        csrf=_csrf(request, secret) if course is not None else None,
        course=course.slug if course is not None else None,
        notice=notice,
        error=error,
    )


@router.get(REGRADES + "/{set_id}", response_class=HTMLResponse)
def regrade(set_id: str, request: Request, session: SessionDep, settings: SettingsDep, user: WebInstructor) -> Response:
    """The set's state, its forms and its diff."""
    found = _set_of(session, user, set_id)
    asked = request.query_params.get("course")
    own = session.get(Course, found.course_id) if found.course_id is not None else None
    if asked and own is not None and own.slug != asked[:64]:  # a link names the set's own course
        raise PageNotFound(user, "This regrade is not one of that course's.")
    keep_text = request.query_params.get("keep") or Keep.NEW.value
    if keep_text not in (Keep.NEW.value, Keep.HIGHER.value):
        raise PageError(400, "Bad request", "keep is new or higher.", user)
    done = request.query_params.get("done", "")
    notice = {
        "applied": "Applied: learners whose score changed read the reason beside it.",
        "cancelled": "Cancelled: nothing learners see changed.",
    }.get(done, "")
    session.commit()
    body = _set_page(session, request, user, found, settings.secret_bytes, keep=Keep(keep_text), notice=notice)
    return html_response(body)


def _form_set(
    request: Request, fields: dict[str, str], session: Session, secret: bytes, user: User, set_id: str
) -> tuple[Course, RegradeSet]:
    """The course the form names (checked: this site's page, a course the sender teaches) and
    its set; a set of another course (or of every course) is not acted on from this page."""
    course = staff_form_course(request, fields, session, secret, user, "regrade")
    regrade = _set_of(session, user, set_id)
    if regrade.course_id != course.id:
        raise PageNotFound(user, "This regrade is not one of that course's.")
    return course, regrade


def _refused(
    session: Session, request: Request, user: User, regrade: RegradeSet, secret: bytes, status: int, text: str
) -> Response:
    """The set's page again with the refusal in it, once what the form began is rolled back."""
    session.rollback()
    body = _set_page(session, request, user, regrade, secret, error=text)
    return html_response(body, status_code=status)


@router.post(REGRADES + "/{set_id}/apply")
def apply(
    set_id: str, request: Request, form: FormFields, session: SessionDep, settings: SettingsDep, user: WebInstructor
) -> Response:
    """Make a ready set live with the reason learners read (once; refused while grading)."""
    fields = form or {}
    course, regrade = _form_set(request, fields, session, settings.secret_bytes, user, set_id)
    keep_text = fields.get("keep") or Keep.NEW.value
    sent = fields.get("reason") or ""
    reason = display_text(sent, REASON_CHARS + 1) or ""

    def refused(status: int, text: str) -> Response:
        return _refused(session, request, user, regrade, settings.secret_bytes, status, text)

    if keep_text not in (Keep.NEW.value, Keep.HIGHER.value):
        return refused(400, "Keep the regraded verdict (new) or the better of the two (higher).")
    if not reason or not is_storable_text(sent):
        return refused(400, "Say why: each learner whose score changes reads the reason beside it.")
    if len(reason) > REASON_CHARS:
        return refused(400, f"A reason is at most {REASON_CHARS} characters.")
    try:
        apply_set(session, regrade, keep=Keep(keep_text), reason=reason, actor=user.name)
    except GraderError as exc:  # still grading, or applied or cancelled already
        return refused(exc.status_code, exc.detail)
    session.commit()
    return redirect(regrade_url(regrade.id, course.slug, keep=keep_text, done="applied"))


@router.post(REGRADES + "/{set_id}/cancel")
def cancel(
    set_id: str, request: Request, form: FormFields, session: SessionDep, settings: SettingsDep, user: WebInstructor
) -> Response:
    """Drop a set that was not applied; nothing learners see changes."""
    fields = form or {}
    course, regrade = _form_set(request, fields, session, settings.secret_bytes, user, set_id)
    try:
        service.cancel(session, regrade, actor=user.name)
    except GraderError as exc:
        return _refused(session, request, user, regrade, settings.secret_bytes, exc.status_code, exc.detail)
    session.commit()
    return redirect(in_course(regrade_url(regrade.id), course.slug, done="cancelled"))
