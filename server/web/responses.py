"""What every HTML route shares: security headers, redirects, the session cookie's removal, form
and number parsing. Who may see a page is ``server.web.deps``; what a page answers instead, ``server.web.errors``.

One policy for every page: nothing but our own style, our one script file and requests
back to ourselves; never framed; never cached (the pages show private data).
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import parse_qs, urlsplit

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy import select
from sqlalchemy.orm import Session, object_session

from server.models import DEFAULT_COURSE_ID, Course, Enrollment, Role, User
from server.web import html
from server.web.session import COOKIE_NAME, COOKIE_PATH

MAX_FORM_BYTES = 4096

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",  # no-referrer would make browsers send `Origin: null`
}


def html_response(content: str, status_code: int = 200) -> HTMLResponse:
    """An HTML page with the security headers."""
    return HTMLResponse(content, status_code=status_code, headers=SECURITY_HEADERS)


def redirect(location: str) -> RedirectResponse:
    """A 303 (after a form post, the browser GETs ``location``)."""
    return RedirectResponse(location, status_code=303, headers=SECURITY_HEADERS)


def same_origin(request: Request) -> bool:
    """False when the browser says the request comes from another site."""
    origin = request.headers.get("origin")
    if origin is None:
        return True  # not a browser form post from another site (those always send Origin)
    hosts = {request.headers.get("host"), request.headers.get("x-forwarded-host")} - {None}
    return origin != "null" and urlsplit(origin).netloc in hosts


def clear_cookie(response: Response, request: Request) -> None:
    """Tell the browser to forget the session cookie."""
    response.delete_cookie(
        COOKIE_NAME, path=COOKIE_PATH, httponly=True, samesite="strict", secure=request.url.scheme == "https"
    )


def local_path(value: str | None) -> str | None:
    """``value`` if it is a path on this site (``/x``, not ``//host`` or ``https://...``); else None."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value or len(value) > 512:
        return None
    parts = urlsplit(value)
    return value if not parts.scheme and not parts.netloc else None


async def read_form(request: Request, limit: int = MAX_FORM_BYTES) -> dict[str, str] | None:
    """The url-encoded form body (first value per field); None if over ``limit`` bytes or not a
    form. A form with longer text than the default allows (a review comment) names its own limit."""
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/x-www-form-urlencoded":
        return None
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    try:
        fields = parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=20)
    except (UnicodeDecodeError, ValueError):
        return None
    return {k: v[0] for k, v in fields.items()}


async def _form(request: Request) -> dict[str, str] | None:
    return await read_form(request)


FormFields = Annotated[dict[str, str] | None, Depends(_form)]


def viewer_of(user: User, course: Course | None = None) -> html.Viewer:
    """The header's view of a user, on a page about ``course`` (None: no course)."""
    place = None if course is None else html.CoursePlace(course.slug, course.title, course.time_zone)
    instructor = Role(user.role).reads_everything
    session = object_session(user)
    if not instructor and course is not None and session is not None:  # LMS staff of this course
        instructor = teaches(session, user, course.id)
    return html.Viewer(user.name, user.display_name, instructor, place)


def teaches(session: Session, user: User, course_id: int | None = None) -> bool:
    """Whether ``user`` teaches: an instructor or admin account, or (the accounts an LMS makes,
    ``server.lti.accounts``) an instructor enrollment, in ``course_id`` or, None, in any course.
    The page authorization's question; what each page shows stays the domains' (the courses
    they teach, ``server.courses.service.taught_course_ids``)."""
    if Role(user.role).reads_everything:
        return True
    query = select(Enrollment.course_id).where(
        Enrollment.user_id == user.id,
        Enrollment.role == "instructor",  # the enrollment roles: models.course.Enrollment
        Enrollment.course_id != DEFAULT_COURSE_ID,
    )
    if course_id is not None:
        query = query.where(Enrollment.course_id == course_id)
    return session.scalar(query.limit(1)) is not None


def parse_int(text: str | None, default: int, low: int, high: int) -> int | None:
    """``text`` as an integer in ``[low, high]``; ``default`` when absent; None when bad."""
    if text is None or text == "":
        return default
    if not text.isdigit() or len(text) > 9:
        return None
    value = int(text)
    return value if low <= value <= high else None
