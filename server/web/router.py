"""Login, logout and the leaderboard page; the dashboard's pages are in ``dashboard_router``.

- ``GET /login``: the token form. ``POST /login`` (form fields ``token``, optional ``next``):
  a live token of any role gets a signed session cookie (HttpOnly, SameSite=Strict, Secure
  over https, path ``/``; see ``server.web.session``) and a 303 to ``next`` when it is a path
  on this site (for a learner: one of their own pages), else to the viewer's start page
  (instructors: the class; learners: their own page). An unknown or revoked token gets 401 and the form again.
- ``POST /logout``: clears the cookie, 303 to the form.
- ``GET /leaderboard``: the board for ``exercise=`` (omit for overall), ``page=`` (1-based)
  and ``limit=`` (1-200, default 50), instructors and admins only (a learner gets 404);
  without a session, the login form.

The rows come from ``server.leaderboard.service.board``, the same query as the API. POSTs
with a cross-site ``Origin`` are refused (SameSite=Strict already keeps the cookie off
them; this also stops login CSRF). These routes are HTML, so they stay out of the OpenAPI
schema.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from server.catalog.service import list_exercises
from server.dashboard.service import change_mark
from server.deps import SessionDep, SettingsDep
from server.leaderboard import service
from server.models import Role
from server.security import pseudonym
from server.web import html, pages
from server.web.responses import (
    FormFields,
    bad_request,
    clear_cookie,
    gate,
    html_response,
    local_path,
    not_found,
    parse_int,
    redirect,
    same_origin,
    viewer_of,
)
from server.web.session import COOKIE_NAME, COOKIE_PATH, SESSION_SECONDS, login_for_token, sign
from server.web.urls import DASHBOARD, learner_url

router = APIRouter(include_in_schema=False)

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
MAX_OFFSET = 1_000_000  # the API's own bound


@router.get("/login", response_class=HTMLResponse)
def login_form(next: str | None = None) -> Response:  # noqa: A002  (the conventional name)
    """The token form."""
    return html_response(html.login_page(next_path=local_path(next) or ""))


@router.post("/login", response_class=HTMLResponse)
def login(request: Request, form: FormFields, session: SessionDep, settings: SettingsDep) -> Response:
    """Check the token once; its owner gets a signed session cookie."""
    if not same_origin(request):
        return html_response(html.message_page("Cross-site request refused", "Log in from this site's own form.", link=("Log in", "/login")), 403)
    if form is None:
        return html_response(html.login_page("Send the form as a normal web form (at most 4 KiB)."), 400)
    next_path = local_path(form.get("next")) or ""
    token = form.get("token", "").strip()
    if not token:
        return html_response(html.login_page("Enter your API token.", next_path), 400)
    found = login_for_token(session, token, settings.secret_bytes)
    if found is None:
        return html_response(html.login_page("That token is unknown or revoked.", next_path), 401)
    instructor = Role(found.user.role).reads_everything
    start = DASHBOARD if instructor else learner_url(found.user.name)
    if not instructor and not next_path.startswith((start + "?", "/dashboard/submissions/")) and next_path != start:
        next_path = ""  # a learner who began on an instructors' page goes to their own instead of a 404
    response = redirect(next_path or start)
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


@router.post("/logout")
def logout(request: Request) -> Response:
    """Forget the session cookie (the API token itself stays valid)."""
    if not same_origin(request):
        return html_response(html.message_page("Cross-site request refused", "Log out from this site's own page."), 403)
    response = redirect("/login")
    clear_cookie(response, request)
    return response


@router.get("/leaderboard", response_class=HTMLResponse)
def leaderboard_page(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    exercise: str | None = None,
    page: str | None = None,
    limit: str | None = None,
) -> Response:
    """The board for a logged-in instructor; the login form for anyone not logged in."""
    viewer = gate(request, session, settings, instructors_only=True)
    if isinstance(viewer, Response):
        return viewer
    page_number = parse_int(page, 1, 1, MAX_OFFSET)
    per_page = parse_int(limit, DEFAULT_LIMIT, 1, MAX_LIMIT)
    if page_number is None or per_page is None or (page_number - 1) * per_page > MAX_OFFSET:
        return bad_request(viewer, f"page must be 1 or more and limit 1 to {MAX_LIMIT}.")
    exercises = [(s.slug, s.title) for s in list_exercises()]
    slug = exercise or None
    if slug is not None and slug not in {s for s, _ in exercises}:
        return not_found(viewer, f"No exercise is called {slug!r}.")
    offset = (page_number - 1) * per_page
    total, rows = service.board(session, slug, per_page, offset)
    names = None
    if settings.LEADERBOARD_PSEUDONYMS:
        names = {r.user_id: pseudonym(r.user_id, settings.secret_bytes) for r in rows}
    view = pages.BoardView(
        viewer=viewer_of(viewer), exercises=exercises, exercise=slug, total=total,
        limit=per_page, offset=offset, rows=rows, pseudonyms=names,
    )
    return html_response(pages.board_page(view, DEFAULT_LIMIT, mark=change_mark(session, None)))
