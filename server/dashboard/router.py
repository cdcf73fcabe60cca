"""``/dashboard``: the class at a glance, for instructors; a learner's own work, for learners.

All pages need the web session (``POST /login``); without it they show the login form and
come back afterwards. Instructors and admins see everything; a learner sees their own
learner page and their own submissions, and gets the same 404 for anything else as for
what does not exist. Each route says who may see it with a dependency (``WebUser``,
``WebInstructor`` from ``server.web.deps``; ``DashboardCourse``, an instructor's course).

- ``GET /dashboard``: the class, its staff (an instructor's forms to add and remove TAs post
  to ``server.dashboard.staff``), and the course's audit log (``?audit_page=``, newest first;
  ``server.courses.audit``); a learner is sent to their own page.
- ``GET /dashboard/exercises/{slug}``: charts of one exercise.
- ``GET /dashboard/exercises/{slug}/mistake?mistake=``: who hit one mistake (by the mistake's
  id, as the exercise page's bars link it); ``.../misconception``, its old address, redirects
  there (308) for one release.
- ``GET /dashboard/learners``: every learner; ``/dashboard/learners/{login}``: one.
- ``GET /dashboard/submissions/{id}``: one submission, its feedback, its human review (comments
  on lines, review requests and answers, and the forms: ``server.review``) and source.
- ``POST /dashboard/submit``: a submission from the upload form on a learner's own page (a
  ``.py`` or ``.ipynb`` file, or a pasted function; ``server.dashboard.upload``), then 303 to
  its page, which reloads by itself when the verdict arrives.
- ``GET /dashboard/live``: ``{"mark": ...}``, which changes when a submission the viewer can
  see is added or finished; ``/static/live.js`` polls it and reloads the page.
- ``GET /dashboard/gradebook.csv``, ``/dashboard/gradebook-canvas.csv``,
  ``/dashboard/gradebook-moodle.csv``: the gradebooks, for the browser (the API has them for
  bearer tokens; ``server.gradebook.service`` has their one rule).

The class pages and gradebooks are per course: ``?course=<slug>`` picks one of the courses the
instructor teaches (admins: any) and is remembered in a cookie for the next pages; without it,
the default course (``server.courses.page_course``).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from exercises.registry import all_exercises
from server.catalogue.service import exercise_detail, list_exercises
from server.catalogue.starters import NOTEBOOK, PY, NotebookUnavailable, starter_file
from server.catalogue.versions import unverified_changes, version_for_user
from server.config import Settings
from server.courses import audit
from server.courses import corrections as correction_service
from server.courses.feedback_policy import AccessMemo, access_for, hidden_own_exercises, spend_token, visible_report
from server.courses.page_course import DashboardCourse, PageCourse, learner_course, pick_page_course
from server.courses.service import (
    course_for_submission,
    courses_of,
    may_read_learner,
    taught_course_ids,
    teaches_course,
)
from server.courses.sets import course_exercises, late_notice, released_exercises
from server.courses.staff import may_change_staff, staff_of
from server.courses.windows import exercise_windows
from server.dashboard import corrections as correction_pages
from server.dashboard import pages, service
from server.dashboard.pages import StaffView
from server.dashboard.staff import staff_notice
from server.dashboard.upload import (
    KEY_SEPARATOR,
    LATE_CONFIRMED,
    MAX_CODE_FACTOR,
    MAX_UPLOAD_BYTES,
    LateAsk,
    Upload,
    UploadRefused,
    carried,
    prepare,
    read_upload,
    stored_key,
    upload_slots,
)
from server.deps import Now, SessionDep, SettingsDep, StateDep, submission_window
from server.errors import ExerciseNotFound, GraderError
from server.gradebook.service import (
    LoginColumn,
    canvas_gradebook_csv,
    gradebook_csv,
    moodle_gradebook_csv,
)
from server.lti.platforms import failing_platform
from server.models import DEFAULT_COURSE_ID, CorrectionKind, Course, Role, ScoreCorrection, Submission, User
from server.regrades.pages import stale_notice, unverified_notice
from server.regrades.service import stale_lines
from server.review import pages as review_pages
from server.review import service as review_service
from server.state import AppState
from server.stats.service import current_mistake_title
from server.submissions.limits import check_submission_limits
from server.submissions.schemas import SubmissionCreate
from server.submissions.service import create_submission, to_public
from server.submissions.waiting import change_mark
from server.web.deps import WebInstructor, WebSender, WebUser
from server.web.errors import LoginRequired, PageBadRequest, PageError, PageNotFound
from server.web.responses import (
    SECURITY_HEADERS,
    FormFields,
    html_response,
    parse_int,
    redirect,
    same_origin,
    viewer_of,
)
from server.web.responses import teaches as teaches_a_course
from server.web.session import COOKIE_NAME, form_token, form_token_matches, notice_token_matches, user_for_cookie
from server.web.urls import learner_url, submission_url

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


def _titles(session: Session, course: Course) -> dict[str, str]:
    """The titles of the course's exercises (its published set; the default course: the
    catalogue), in catalogue order: the only exercises a course page lists."""
    published = set(course_exercises(session, course))
    return {x.slug: x.title for x in list_exercises() if x.slug in published}


def _exercise_titles(session: Session, user: User, course: Course, slug: str) -> dict[str, str]:
    """The course's exercise titles; ``PageNotFound`` when ``slug`` is not one of them."""
    titles = _titles(session, course)
    if slug not in titles:
        raise PageNotFound(user, f"No exercise {slug!r} in the course {course.title!r}.")
    return titles


def _staff_view(request: Request, session: Session, user: User, course: Course, secret: bytes) -> StaffView | None:
    """The class page's staff section (none on the default course, whose staff are the
    instructor accounts); its forms only for those who may change the staff."""
    if course.is_default:
        return None
    changer = may_change_staff(session, user, course)
    # The notice after the staff form, only when the redirect signed it for this viewer: a
    # link made elsewhere (``?staff_removed=profb``) shows nothing.
    signed = request.query_params.get("notice")
    done = [(key, request.query_params.get(key, "")[:64]) for key in ("staff_added", "staff_removed")]
    notice = " ".join(
        f"{login} {'is now a TA of' if key == 'staff_added' else 'is no longer staff of'} this course."
        for key, login in done
        if login and notice_token_matches(signed, user.id, staff_notice(course.slug, key, login), secret)
    )
    return StaffView(
        members=[(u.name, u.display_name, role) for u, role in staff_of(session, course)],
        csrf=form_token(request.cookies.get(COOKIE_NAME) or "", secret) if changer else None,
        notice=notice,
    )


@router.get("/dashboard", response_class=HTMLResponse)
def class_page(request: Request, session: SessionDep, settings: SettingsDep, user: WebUser) -> Response:
    """The class: every exercise and its most common mistake (a learner goes to their own page)."""
    if not teaches_a_course(session, user):
        return redirect(learner_url(user.name))
    page_course = pick_page_course(request, session, user)  # after the redirect: a learner has no course to pick
    course = page_course.course
    titles = _titles(session, course)
    lines, mistakes = service.class_overview(session, list(titles), course.id)
    mark = change_mark(session, None)
    audit_page = parse_int(request.query_params.get("audit_page"), 1, 1, MAX_PAGE)
    if audit_page is None:
        raise PageBadRequest(user, f"audit_page is a page number from 1 to {MAX_PAGE}.")
    body = pages.class_page(
        viewer_of(user, course),
        titles,
        lines,
        mistakes,
        mark=mark,
        course=(course.slug, course.title),
        courses=_courses(session, user),
        lms_failure=failing_platform(session, course.id),
        audit=audit.latest(session, course, audit_page),
        staff=_staff_view(request, session, user, course, settings.secret_bytes),
        open_reviews=review_service.open_count(session, course),
    )
    return page_course.remember(html_response(body), request)


@router.get("/dashboard/exercises/{slug}", response_class=HTMLResponse)
def exercise_page(
    slug: str, request: Request, session: SessionDep, user: WebInstructor, page_course: DashboardCourse
) -> Response:
    """One exercise's charts."""
    titles = _exercise_titles(session, user, page_course.course, slug)
    view = service.exercise_view(session, slug, page_course.course.id)
    mark = change_mark(session, None)
    notice = stale_notice(stale_lines(session, {page_course.course.id}, slug))
    known = [x for x in all_exercises() if x.slug == slug]
    notice += unverified_notice(unverified_changes(session, known))  # the folder changed, unverified
    body = pages.exercise_page(
        viewer_of(user, page_course.course),
        slug,
        _course_title(titles[slug], page_course.course),
        view,
        mark=mark,
        notice=notice,
    )
    return page_course.remember(html_response(body), request)


@router.get("/dashboard/exercises/{slug}/mistake", response_class=HTMLResponse)
def mistake_page(
    slug: str,
    request: Request,
    session: SessionDep,
    user: WebInstructor,
    page_course: DashboardCourse,
    mistake: str = "",
) -> Response:
    """The learners who hit one mistake of one exercise (by the mistake's id)."""
    titles = _exercise_titles(session, user, page_course.course, slug)
    if not mistake or len(mistake) > 2000:
        raise PageBadRequest(user, "Name a mistake (mistake=...), as the exercise page's bars do.")
    holders = service.mistake_holders(session, slug, mistake, page_course.course.id)
    mark = change_mark(session, None)
    title = _course_title(titles[slug], page_course.course)
    body = pages.mistake_page(
        viewer_of(user, page_course.course), slug, title, current_mistake_title(mistake, mistake), holders, mark=mark
    )
    return page_course.remember(html_response(body), request)


@router.get("/dashboard/exercises/{slug}/misconception")
def old_mistake_page(slug: str, request: Request, user: WebInstructor) -> Response:
    """The mistake page's old address (until issue 33): 308 to ``.../mistake``, the query kept
    (bookmarks and links in old mail keep working for one release); who may follow it is
    asked here as on the page itself, so the address answers no one else."""
    query = request.url.query
    target = f"/dashboard/exercises/{quote(slug, safe='')}/mistake" + (f"?{query}" if query else "")
    return RedirectResponse(target, status_code=308, headers=SECURITY_HEADERS)


@router.get("/dashboard/learners", response_class=HTMLResponse)
def learners_page(
    request: Request, session: SessionDep, user: WebInstructor, page_course: DashboardCourse, page: str | None = None
) -> Response:
    """Every learner of the course, by login."""
    number = parse_int(page, 1, 1, MAX_PAGE)
    if number is None:
        raise PageBadRequest(user, "page must be a whole number, 1 or more.")
    offset = (number - 1) * LEARNERS_PER_PAGE
    total, lines = service.learners(session, LEARNERS_PER_PAGE, offset, page_course.course.id)
    mark = change_mark(session, None)
    body = pages.learners_page(viewer_of(user, page_course.course), total, lines, number, LEARNERS_PER_PAGE, mark=mark)
    return page_course.remember(html_response(body), request)


@router.get("/dashboard/learners/{name}", response_class=HTMLResponse)
def learner_page(
    name: str,
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    user: WebUser,
    now: Now,
    page: str | None = None,
    exercise: str | None = None,
) -> Response:
    """One learner's exercises and submissions: their own (as the feedback policies allow), or
    anyone's for instructors. ``exercise``: the one the page is opened for (an LTI launch of
    that exercise): its row is marked and the upload form has it chosen."""
    instructor = teaches_a_course(session, user)
    owner = user if name == user.name else (service.learner_by_name(session, name) if instructor else None)
    if owner is None or not may_read_learner(session, user, owner):  # courses: only the ones they teach
        raise PageNotFound(user)
    number = parse_int(page, 1, 1, MAX_PAGE)
    if number is None:
        raise PageBadRequest(user, "page must be a whole number, 1 or more.")
    course = learner_course(request, session, user, owner)
    titles = _titles(session, course)
    schedule = exercise_windows(session, course, owner, now)  # what `ppo-submit exercises` lists them
    if owner.id == user.id and not teaches_course(session, user, course.id):  # a learner sees what is released
        titles = {slug: t for slug, t in titles.items() if slug in {w.exercise for w in schedule}}
    hidden = hidden_own_exercises(session, user, now, course) if owner.id == user.id else set()
    exercises = service.learner_exercises(session, owner.id, list(titles), course.id)
    recent = service.recent_submissions(
        session,
        user_id=owner.id,
        limit=SUBMISSIONS_PER_PAGE,
        offset=(number - 1) * SUBMISSIONS_PER_PAGE,
        course_id=course.id,
    )
    visible = _visible_lines(session, user, [x.last for x in exercises if x.last] + recent, now)
    view = pages.LearnerView(
        name=owner.name,
        display_name=owner.display_name,
        exercises=[
            replace(
                x,
                score=None if x.slug in hidden else x.score,
                best_hidden=x.slug in hidden,
                last=visible[x.last.id] if x.last else None,
            )
            for x in exercises
        ],
        submissions=[visible[line.id] for line in recent],
        total_submissions=service.count_submissions(session, owner.id, course.id),
        page_number=number,
        per_page=SUBMISSIONS_PER_PAGE,
        schedule=[w for w in schedule if w.exercise in titles],
    )
    mark = change_mark(session, None if instructor else user.id)
    upload = _upload_view(session, user, request, settings) if owner.id == user.id else None
    viewer = viewer_of(user, course)
    teaches = owner.id != user.id and teaches_course(session, user, course.id)
    corrections = correction_pages.corrections_section(
        viewer,
        owner.name,
        titles,
        _visible_corrections(correction_service.history(session, course, owner.id), titles, hidden),
        form_token(request.cookies.get(COOKIE_NAME) or "", settings.secret_bytes) if teaches else None,
    )
    focus = exercise if exercise in titles else None
    return html_response(
        pages.learner_page(viewer, titles, view, mark=mark, upload=upload, corrections=corrections, focus=focus)
    )


def _visible_corrections(
    rows: list[ScoreCorrection], titles: dict[str, str], hidden: set[str]
) -> list[ScoreCorrection]:
    """The corrections a learner's page lists: those of the exercises it shows, without the
    overrides and excuses of exercises whose score the feedback policy holds back (an override
    is a score; the scores API holds back an excuse too). ``hidden`` is empty and ``titles``
    whole for the course's instructors."""
    held = (CorrectionKind.OVERRIDE, CorrectionKind.EXCUSE)
    return [r for r in rows if r.exercise in titles and not (r.exercise in hidden and r.kind in held)]


class TokenRefused(PageError):
    """A token the page's button could not spend; the page says why and links back."""

    def __init__(self, status_code: int, text: str, back: str) -> None:
        super().__init__(status_code, "No token spent", text, link=("Back to the submission", back))


def _visible_lines(
    session: Session, viewer: User, lines: list[service.SubmissionLine], now: datetime
) -> dict[int, service.SubmissionLine]:
    """Submission lines by id, each as ``viewer`` may see it (its set's feedback policy). A page's
    worth costs the same few queries however many lines it has: its rows and their tokens in one
    query each, every set entry and count once (``AccessMemo``)."""
    ids = {line.id for line in lines}
    rows = {row.id: row for row in session.scalars(select(Submission).where(Submission.id.in_(ids)))} if ids else {}
    memo = AccessMemo().with_tokens(session, ids)
    return {
        line.id: line
        if (row := rows.get(line.id)) is None
        else visible_report(line, access_for(session, viewer, row, now, memo=memo))
        for line in lines
    }


def _upload_view(session: Session, user: User, request: Request, settings: Settings) -> pages.UploadView:
    """The upload form's token (this session's), a fresh idempotency key, the courses to pick from."""
    mine = [(course.slug, course.title) for course, _role in courses_of(session, user)]
    return pages.UploadView(
        form_token=form_token(request.cookies.get(COOKIE_NAME) or "", settings.secret_bytes),
        idempotency_key=str(uuid.uuid4()),
        courses=mine if len(mine) > 1 else [],
        max_source_kib=settings.MAX_SOURCE_BYTES // 1024,
        max_upload_mib=MAX_UPLOAD_BYTES // 2**20,
        max_notebook_code_kib=MAX_CODE_FACTOR * settings.MAX_SOURCE_BYTES // 1024,
    )


@router.get("/dashboard/starter/{name}")
def starter_download(name: str, session: SessionDep, user: WebUser, now: Now) -> Response:
    """An exercise's starter to download, ``<slug>.py`` or ``<slug>.ipynb``: what ``ppo-submit
    starter`` (``--notebook``) writes, at the version the learner's courses serve; the same 404
    as ``GET /exercises/{slug}`` for an exercise not released to them."""
    slug, _, suffix = name.rpartition(".")
    if f".{suffix}" not in (PY, NOTEBOOK) or len(slug) > 64:
        raise PageNotFound(user)
    try:
        detail = exercise_detail(slug, released_exercises(session, user, now), version_for_user(session, user.id, slug))
        found = starter_file(detail, f".{suffix}")
    except ExerciseNotFound:
        raise PageNotFound(user) from None
    except NotebookUnavailable as exc:
        raise PageError(501, "No notebook here", f"{exc} Download the .py starter instead.") from None
    disposition = f'attachment; filename="{found.filename}"'
    return Response(
        found.text, media_type=found.media_type, headers={**SECURITY_HEADERS, "Content-Disposition": disposition}
    )


@router.get("/dashboard/submissions/{submission_id}", response_class=HTMLResponse)
def submission_page(
    submission_id: str, request: Request, session: SessionDep, settings: SettingsDep, user: WebUser, now: Now
) -> Response:
    """One submission: the learner's own (as its set's feedback policy allows), or anyone's for instructors."""
    number = parse_int(submission_id, 0, 1, MAX_ID)
    submission = service.submission_with_checks(session, number) if number else None
    if submission is None or (
        submission.user_id != user.id and not teaches_course(session, user, submission.course_id)
    ):
        raise PageNotFound(user)
    mark = change_mark(session, None if Role(user.role).reads_everything else user.id)
    title = {x.slug: x.title for x in list_exercises()}.get(submission.exercise, submission.exercise)
    course = session.get(Course, submission.course_id)
    visible = visible_report(to_public(session, submission), access_for(session, user, submission, now))
    csrf = form_token(request.cookies.get(COOKIE_NAME) or "", settings.secret_bytes)
    viewer = viewer_of(user, course)
    review = review_service.review_of(session, user, submission, now)
    staff = teaches_course(session, user, submission.course_id)
    forms = review_pages.ReviewForms(
        csrf=csrf,
        staff=staff,
        may_request=not staff
        and submission.user_id == user.id
        and submission.status == "done"
        and not review.held
        and not any(r.state == "open" for r in review.requests)
        and len(review.requests) < review_service.MAX_REQUESTS_PER_SUBMISSION,
        course=course.slug if course is not None else "",
        exercise=title,
        lines=review_service.source_lines(submission),
    )
    section = review_pages.review_section(viewer, submission.source, review, forms)
    return html_response(
        pages.submission_page(viewer, title, submission, mark=mark, visible=visible, csrf=csrf, review=section)
    )


@router.post("/dashboard/submissions/{submission_id}/token")
def spend_token_form(
    submission_id: str,
    request: Request,
    form: FormFields,
    session: SessionDep,
    state: StateDep,
    user: WebUser,
    now: Now,
) -> Response:
    """The submission page's "Use a token" button: ``POST /api/v1/submissions/{id}/token``'s rule."""
    number = parse_int(submission_id, 0, 1, MAX_ID)
    submission = service.submission_with_checks(session, number) if number else None
    if submission is None or submission.user_id != user.id:
        raise PageNotFound(user)
    back = submission_url(submission.id)
    if not same_origin(request) or not form_token_matches(
        (form or {}).get("csrf"), request.cookies.get(COOKIE_NAME), state.settings.secret_bytes
    ):
        raise TokenRefused(
            403,
            "The form was not sent from your submission's page (or it is out of date): reload the page and try again.",
            back,
        )
    try:
        spend_token(session, user, submission, now)
    except GraderError as exc:  # the API's refusals, in its own words
        raise TokenRefused(exc.status_code, exc.detail, back) from None
    session.commit()
    return redirect(back)


@router.post("/dashboard/submit")
async def submit_upload(request: Request, state: StateDep, user: WebSender) -> Response:
    """Submit the upload form's file or pasted function, as ``POST /api/v1/submissions`` does.

    Who sends it (the session cookie, ``WebSender``, in a database session closed before the
    route runs; the ``Origin``; the form's token in the form's address) is settled first; then
    the body is read under the learner's upload slots (``UploadSlots``: 429 past two at once)
    holding no database connection and no worker thread, and refused if it stalls (408); only
    then is a new session opened, in a worker thread, to check the limits and store it."""
    cookie = request.cookies.get(COOKIE_NAME)
    back = learner_url(user.name)
    if not same_origin(request) or not form_token_matches(
        request.query_params.get("csrf"), cookie, state.settings.secret_bytes
    ):
        raise UploadRefused(
            403,
            "The form was not sent from your dashboard page (or it is out of date): reload your page and submit again.",
            back,
        )
    with upload_slots(request).hold(user.id, back):
        upload = await read_upload(request, max_source_bytes=state.settings.MAX_SOURCE_BYTES, back=back)
    stored = await run_in_threadpool(_store_upload, request, state, cookie, upload, back)
    if isinstance(stored, LateAsk):  # past the due date: nothing is sent until the learner confirms
        token = form_token(cookie or "", state.settings.secret_bytes)
        return html_response(pages.late_confirm_page(viewer_of(user), stored, carried(stored.prepared), token, back))
    return redirect(submission_url(stored))


def _store_upload(request: Request, state: AppState, cookie: str | None, upload: Upload, back: str) -> int | LateAsk:
    """The id of the submission ``upload`` makes (or made: a replay of its key), in a session
    of its own; ``UploadRefused`` with the API's sentence when it makes none. An upload to an
    exercise past its due date is not sent unless the form says the learner confirmed it
    (``late=confirmed``): the :class:`LateAsk` says what to ask.

    A replay of the form's key is answered before the limits and before any notebook is
    built, so replays cost one lookup; the same key with different content is refused."""
    settings = state.settings
    with state.session_factory() as session:
        user = user_for_cookie(session, cookie, settings.secret_bytes)
        if user is None:  # logged out (or the token revoked) while the body arrived
            raise LoginRequired(session_ended=True)
        key = stored_key(upload)
        sent_key = upload.fields.get("key")
        if key is not None and sent_key:
            earlier = service.upload_replay(session, user.id, sent_key, KEY_SEPARATOR)
            if earlier is not None:
                if earlier.idempotency_key == key:
                    return earlier.id
                raise UploadRefused(
                    409,
                    "This form was already used to submit something else; reload your page to submit again.",
                    back,
                )
        now = state.clock()
        try:
            check_submission_limits(user, session, settings, submission_window(request, settings), key)
            prepared = prepare(
                upload, back, max_source_bytes=settings.MAX_SOURCE_BYTES, visible=released_exercises(session, user, now)
            )
            if upload.fields.get("late") != LATE_CONFIRMED:
                course = course_for_submission(session, user, upload.fields.get("course") or None)
                notice = late_notice(session, course, user, prepared.exercise, now)
                if notice is not None:
                    return LateAsk(prepared, course.slug, notice, upload.fields.get("key") or "")
            payload = SubmissionCreate(
                exercise=prepared.exercise,
                source=prepared.source,
                filename=prepared.filename,
                course=upload.fields.get("course") or None,
            )
            submission, _ = create_submission(
                session,
                state.queue,
                user,
                payload,
                max_source_bytes=settings.MAX_SOURCE_BYTES,
                idempotency_key=key,
                max_queued=settings.MAX_QUEUED_PER_USER,
                retry_after=math.ceil(settings.WALL_SECONDS),
                now=now,
            )
        except GraderError as exc:  # the API's refusals, in its own words
            raise UploadRefused(exc.status_code, exc.detail, back) from None
        except ValidationError:
            raise UploadRefused(
                400, "The form's fields are too long; reload your page and submit again.", back
            ) from None
        return submission.id


@router.get("/dashboard/live")
def live(request: Request, session: SessionDep, state: StateDep) -> Response:
    """The viewer's change mark: the class's for instructors, their own for learners. JSON for
    ``/static/live.js``, so no session is a JSON 401, not the login form."""
    user = user_for_cookie(session, request.cookies.get(COOKIE_NAME), state.settings.secret_bytes)
    if user is None:
        return JSONResponse(
            {"error": "NotAuthenticated", "detail": "Log in again."}, status_code=401, headers=SECURITY_HEADERS
        )
    scope = None if Role(user.role).reads_everything else user.id
    return JSONResponse({"mark": change_mark(session, scope)}, headers=SECURITY_HEADERS)


def _csv(body: str, filename: str) -> Response:
    return Response(
        body,
        media_type="text/csv; charset=utf-8",
        headers={**SECURITY_HEADERS, "Content-Disposition": f'attachment; filename="{filename}"'},
    )


@router.get("/dashboard/gradebook.csv")
def gradebook(session: SessionDep, page_course: DashboardCourse) -> Response:
    """The long gradebook of the page's course, for a logged-in instructor."""
    return _gradebook(session, page_course, gradebook_csv, "gradebook")


@router.get("/dashboard/gradebook-canvas.csv")
def canvas_gradebook(
    session: SessionDep,
    page_course: DashboardCourse,
    login_column: Annotated[LoginColumn, Query(description="Where the logins go: SIS Login ID or SIS User ID.")] = (
        "sis-login-id"
    ),
) -> Response:
    """The Canvas gradebook of the page's course, for a logged-in instructor."""
    return _gradebook(session, page_course, lambda s, c: canvas_gradebook_csv(s, c, login_column), "gradebook-canvas")


# The Canvas file's first name, kept for bookmarks.
router.add_api_route("/dashboard/gradebook-wide.csv", canvas_gradebook, methods=["GET"], include_in_schema=False)


@router.get("/dashboard/gradebook-moodle.csv")
def moodle_gradebook(session: SessionDep, page_course: DashboardCourse) -> Response:
    """The Moodle gradebook of the page's course, for a logged-in instructor."""
    return _gradebook(session, page_course, moodle_gradebook_csv, "gradebook-moodle")


def _gradebook(session: Session, page_course: PageCourse, make: Callable[..., str], name: str) -> Response:
    course = page_course.course
    suffix = "" if course.id == DEFAULT_COURSE_ID else f"-{course.slug}"
    return _csv(make(session, course), f"{name}{suffix}.csv")
