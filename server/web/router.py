"""``/leaderboard``: a server-rendered board for instructors, logged in by API token.

- ``GET /leaderboard``: the login form, or (with a valid session cookie) the board for
  ``exercise=`` (omit for overall), ``page=`` (1-based) and ``limit=`` (1-200, default 50).
- ``POST /leaderboard/login``: form field ``token``. An instructor's or admin's live token
  gets a signed session cookie (HttpOnly, SameSite=Strict, Secure over https; see
  ``server.web.session``) and a 303 to the board; a learner's gets 403 "instructors only",
  an unknown or revoked one 401 with the form again.
- ``POST /leaderboard/logout``: clears the cookie, 303 to the form.

The rows come from ``server.leaderboard.service.board``, the same query as the API. POSTs
with a cross-site ``Origin`` are refused (SameSite=Strict already keeps the cookie off
them; this also stops login CSRF). These routes are HTML, so they stay out of the OpenAPI
schema.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import parse_qs, urlsplit

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from server.catalog.service import list_exercises
from server.deps import SessionDep, SettingsDep
from server.leaderboard import service
from server.models import Role
from server.security import pseudonym
from server.web import pages
from server.web.session import (
    COOKIE_NAME,
    COOKIE_PATH,
    SESSION_SECONDS,
    instructor_for_cookie,
    login_for_token,
    sign,
)

router = APIRouter(include_in_schema=False)

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
MAX_OFFSET = 1_000_000  # the API's own bound
MAX_FORM_BYTES = 4096

_SECURITY_HEADERS = {
    # Private data: never cached, never framed, no scripts at all, forms post only here.
    "Cache-Control": "no-store",
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",  # no-referrer would make browsers send `Origin: null`
}


def _html(content: str, status_code: int = 200) -> HTMLResponse:
    return HTMLResponse(content, status_code=status_code, headers=_SECURITY_HEADERS)


def _redirect(location: str) -> RedirectResponse:
    return RedirectResponse(location, status_code=303, headers=_SECURITY_HEADERS)


def _same_origin(request: Request) -> bool:
    """False when the browser says the request comes from another site."""
    origin = request.headers.get("origin")
    if origin is None:
        return True  # not a browser form post from another site (those always send Origin)
    hosts = {request.headers.get("host"), request.headers.get("x-forwarded-host")} - {None}
    return origin != "null" and urlsplit(origin).netloc in hosts


def _clear_cookie(response: Response, request: Request) -> None:
    response.delete_cookie(
        COOKIE_NAME, path=COOKIE_PATH, httponly=True, samesite="strict", secure=request.url.scheme == "https"
    )


async def _form(request: Request) -> dict[str, str] | None:
    """The url-encoded form body (first value per field); None if too large or not a form."""
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/x-www-form-urlencoded":
        return None
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return None
    try:
        fields = parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=20)
    except (UnicodeDecodeError, ValueError):
        return None
    return {k: v[0] for k, v in fields.items()}


FormFields = Annotated[dict[str, str] | None, Depends(_form)]


@router.get("/leaderboard", response_class=HTMLResponse)
def leaderboard_page(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    exercise: str | None = None,
    page: str | None = None,
    limit: str | None = None,
) -> Response:
    """The board for a logged-in instructor; the login form for anyone else."""
    cookie = request.cookies.get(COOKIE_NAME)
    viewer = instructor_for_cookie(session, cookie, settings.secret_bytes)
    if viewer is None:
        notice = "Your session has ended (logged out, expired, or its token was revoked). Log in again." if cookie else None
        response = _html(pages.login_page(notice))
        if cookie:
            _clear_cookie(response, request)
        return response
    page_number = _int(page, 1, 1, MAX_OFFSET)
    per_page = _int(limit, DEFAULT_LIMIT, 1, MAX_LIMIT)
    if page_number is None or per_page is None or (page_number - 1) * per_page > MAX_OFFSET:
        return _html(pages.message_page("Bad request", f"page must be 1 or more and limit 1 to {MAX_LIMIT}.", "Back to the board"), 400)
    exercises = [(s.slug, s.title) for s in list_exercises()]
    slug = exercise or None
    if slug is not None and slug not in {s for s, _ in exercises}:
        return _html(pages.message_page("No such exercise", f"No exercise is called {slug!r}.", "Back to the board"), 404)
    offset = (page_number - 1) * per_page
    total, rows = service.board(session, slug, per_page, offset)
    names = None
    if settings.LEADERBOARD_PSEUDONYMS:
        names = {r.user_id: pseudonym(r.user_id, settings.secret_bytes) for r in rows}
    view = pages.BoardView(
        viewer_name=viewer.display_name, exercises=exercises, exercise=slug, total=total,
        limit=per_page, offset=offset, rows=rows, pseudonyms=names,
    )
    return _html(pages.board_page(view, DEFAULT_LIMIT))


@router.get("/leaderboard/login")
def login_get() -> Response:
    """A reload or bookmark of the login address: back to the form."""
    return _redirect(pages.BOARD_PATH)


@router.post("/leaderboard/login", response_class=HTMLResponse)
def login(request: Request, form: FormFields, session: SessionDep, settings: SettingsDep) -> Response:
    """Check the token once; an instructor's or admin's gets a signed session cookie."""
    if not _same_origin(request):
        return _html(pages.message_page("Cross-site request refused", "Log in from this site's own form."), 403)
    if form is None:
        return _html(pages.login_page("Send the form as a normal web form (at most 4 KiB)."), 400)
    token = form.get("token", "").strip()
    if not token:
        return _html(pages.login_page("Enter your API token."), 400)
    found = login_for_token(session, token, settings.secret_bytes)
    if found is None:
        return _html(pages.login_page("That token is unknown or revoked."), 401)
    if not Role(found.user.role).reads_everything:
        text = (
            "The leaderboard page is for instructors only. Learners see their own results "
            "with ppo-submit history, and the class board through the API."
        )
        return _html(pages.message_page("Instructors only", text), 403)
    response = _redirect(pages.BOARD_PATH)
    response.set_cookie(
        COOKIE_NAME,
        sign(found.user.id, found.token_id, settings.secret_bytes),
        max_age=SESSION_SECONDS,
        path=COOKIE_PATH,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


@router.post("/leaderboard/logout")
def logout(request: Request) -> Response:
    """Forget the session cookie (the API token itself stays valid)."""
    if not _same_origin(request):
        return _html(pages.message_page("Cross-site request refused", "Log out from this site's own page."), 403)
    response = _redirect(pages.BOARD_PATH)
    _clear_cookie(response, request)
    return response


def _int(text: str | None, default: int, low: int, high: int) -> int | None:
    if text is None or text == "":
        return default
    if not text.isdigit() or len(text) > 9:
        return None
    value = int(text)
    return value if low <= value <= high else None
