"""Human review in the browser: the course's request queue and the submission page's forms.

- ``GET /dashboard/reviews?course=``: a course's open review requests and the latest resolved
  ones (its instructors and TAs; a learner gets the 404 page, as for every staff page).
- ``POST /dashboard/reviews/comment``: a staff comment on one line of a submission.
- ``POST /dashboard/reviews/override``: the score that counts set by hand, with a reason
  (``server.courses.corrections.override``, the one override path, as ``/dashboard/corrections``).
- ``POST /dashboard/reviews/answer``: answer and resolve a request, with or without an override.
- ``POST /dashboard/reviews/request``: the learner's request for a review of their submission.

Every form is checked as every dashboard form is: ``Origin`` is this site, and the form token
is the one bound to the session cookie (``server.web.session.form_token``); the staff forms
name a course the sender teaches. Then 303 back to the submission's page. The forms may carry
longer text than the other dashboard forms (:data:`REVIEW_FORM_BYTES`); a body over it is
refused, naming the caps, before anything is read from it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from server.courses import corrections
from server.courses.page_course import DashboardCourse
from server.courses.service import taught_course_named
from server.deps import Now, SessionDep, SettingsDep
from server.errors import GraderError
from server.models import Course, RequestState, Submission, User
from server.models.review import MAX_ANSWER_CHARS, MAX_COMMENT_CHARS, MAX_REQUEST_CHARS
from server.review import service
from server.review.pages import ANSWER_ACTION, COMMENT_ACTION, OVERRIDE_ACTION, REQUEST_ACTION, REVIEWS, reviews_page
from server.web.deps import WebInstructor, WebUser
from server.web.errors import PageError, PageNotFound
from server.web.responses import html_response, parse_int, read_form, redirect, same_origin, viewer_of
from server.web.session import COOKIE_NAME, form_token_matches
from server.web.urls import in_course, submission_url

router = APIRouter(include_in_schema=False)

#: The largest review form read: the longest comment or answer, each character percent-encoded
#: as UTF-8 can be (up to 12 bytes), and the other fields.
REVIEW_FORM_BYTES = 12 * max(MAX_COMMENT_CHARS, MAX_ANSWER_CHARS) + 4096
MAX_ID = 2**31 - 1


async def _review_form(request: Request) -> dict[str, str] | None:
    return await read_form(request, REVIEW_FORM_BYTES)


ReviewForm = Annotated[dict[str, str] | None, Depends(_review_form)]


@router.get(REVIEWS, response_class=HTMLResponse)
def reviews(request: Request, session: SessionDep, user: WebInstructor, page_course: DashboardCourse) -> Response:
    """The course's review requests."""
    course = page_course.course
    waiting = service.course_requests(session, course, RequestState.OPEN)
    resolved = service.course_requests(session, course, RequestState.RESOLVED)[:50]
    return page_course.remember(html_response(reviews_page(viewer_of(user, course), waiting, resolved)), request)


class NotDone(PageError):
    """A review form that could not be applied: the service's refusal, in its words, and a way back."""

    def __init__(self, status_code: int, text: str, viewer: User, back: str) -> None:
        super().__init__(status_code, "Not done", text, viewer, link=("Back to the submission", back))


def _checked(request: Request, form: dict[str, str] | None, secret: bytes, user: User) -> dict[str, str]:
    """The form's fields once it is known to come from this site's page, with this session's token."""
    if form is None:
        raise PageError(
            413,
            "Form refused",
            f"The form is too large or not a form: a comment or an answer is at most {MAX_COMMENT_CHARS} characters, "
            f"a request message at most {MAX_REQUEST_CHARS}.",
            user,
        )
    if not same_origin(request) or not form_token_matches(form.get("csrf"), request.cookies.get(COOKIE_NAME), secret):
        raise PageError(
            403,
            "Form refused",
            "The form was not sent from this site's page (or it is out of date): reload the submission's page and "
            "try again.",
            user,
        )
    return form


def _number(user: User, text: str | None) -> int:
    number = parse_int(text, 0, 1, MAX_ID)
    if not number:
        raise PageNotFound(user)
    return number


def _staff_submission(session: Session, user: User, fields: dict[str, str]) -> tuple[Course, Submission]:
    """The course the form names (one the sender teaches) and its submission the form names; else 404."""
    course = taught_course_named(session, user, fields.get("course") or "")
    submission = session.get(Submission, _number(user, fields.get("submission")))
    if course is None or submission is None or submission.course_id != course.id:
        raise PageNotFound(user, "No submission by that id in a course that you teach.")
    return course, submission


@contextmanager
def _refusals_as_page(user: User, back: str) -> Iterator[None]:
    """The service's refusals (``GraderError``) inside, as the page that says so in its words,
    linking ``back``; every form of this router refuses the same way."""
    try:
        yield
    except GraderError as exc:
        raise NotDone(exc.status_code, exc.detail, user, back) from None


def _done(session: Session, back: str) -> Response:
    """Commit the form's change, then 303 to the review section of the page ``back`` names."""
    session.commit()
    return redirect(back + "#review")


def _score(user: User, text: str | None, back: str) -> float:
    try:
        value = float((text or "").strip())
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise NotDone(400, "A new score is a number from 0 to 100.", user, back)
    return value


@router.post(COMMENT_ACTION)
def comment(
    request: Request, form: ReviewForm, session: SessionDep, settings: SettingsDep, user: WebInstructor
) -> Response:
    """A staff comment on one line, from the submission's page."""
    fields = _checked(request, form, settings.secret_bytes, user)
    _course, submission = _staff_submission(session, user, fields)
    back = submission_url(submission.id)
    line = parse_int(fields.get("line"), 0, 1, 10**6)
    if not line:
        raise NotDone(400, f"Name a line from 1 to {service.source_lines(submission)}.", user, back)
    with _refusals_as_page(user, back):  # the API's refusals, in its words
        service.add_comment(session, user, submission.id, line, fields.get("body", ""))
    return _done(session, back)


@router.post(OVERRIDE_ACTION)
def override(
    request: Request, form: ReviewForm, session: SessionDep, settings: SettingsDep, user: WebInstructor
) -> Response:
    """The score that counts on the submission's exercise, set by hand with a reason."""
    fields = _checked(request, form, settings.secret_bytes, user)
    course, submission = _staff_submission(session, user, fields)
    back = submission_url(submission.id)
    score = _score(user, fields.get("score"), back)
    with _refusals_as_page(user, back):
        corrections.override(
            session, course, submission.user.name, submission.exercise, score, fields.get("reason", ""), user.name
        )
    return _done(session, back)


@router.post(ANSWER_ACTION)
def answer(
    request: Request, form: ReviewForm, session: SessionDep, settings: SettingsDep, user: WebInstructor
) -> Response:
    """Answer and resolve a review request (an override too, when a score is given)."""
    fields = _checked(request, form, settings.secret_bytes, user)
    course = taught_course_named(session, user, fields.get("course") or "")
    if course is None:
        raise PageNotFound(user, "No course by that name that you teach.")
    number = _number(user, fields.get("request"))
    with _refusals_as_page(user, in_course(REVIEWS, course.slug)):  # no such request: back to the queue
        found = service.course_request(session, course, number)
    back = submission_url(found.submission_id)
    text = (fields.get("score") or "").strip()
    score = _score(user, text, back) if text else None
    with _refusals_as_page(user, back):
        service.answer_request(session, course, user, number, fields.get("answer", ""), score, fields.get("reason"))
    return _done(session, back)


@router.post(REQUEST_ACTION)
def ask(
    request: Request, form: ReviewForm, session: SessionDep, settings: SettingsDep, user: WebUser, now: Now
) -> Response:
    """The learner's request for a review of their own submission."""
    fields = _checked(request, form, settings.secret_bytes, user)
    submission = session.get(Submission, _number(user, fields.get("submission")))
    if submission is None or submission.user_id != user.id:
        raise PageNotFound(user)
    back = submission_url(submission.id)
    with _refusals_as_page(user, back):
        service.request_review(session, user, submission.id, fields.get("message", ""), now)
    return _done(session, back)
