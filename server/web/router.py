"""The HTML kit's own routes: login, logout and the pages' one script.

- ``GET /login``: the token form. ``POST /login`` (form fields ``token``, optional ``next``):
  a live token of any role gets a signed session cookie (HttpOnly, SameSite=Strict, Secure
  over https, path ``/``; see ``server.web.session``) and a 303 to ``next`` when it is a path
  on this site (for a learner: one of their own pages), else to the viewer's start page
  (instructors: the class; learners: their own page). An unknown or revoked token gets 401 and the form again.
- ``POST /logout``: ends the session (its cookie is refused from then on, even replayed) and
  clears the cookie, 303 to the form.
- ``GET /static/live.js``: the script that reloads a page when its change mark moves
  (``server.web.html.page``; the mark is the dashboard's ``/dashboard/live``).

The pages live with their domains: the dashboard in ``server.dashboard.router``, the board in
``server.leaderboard.page_router``. POSTs with a cross-site ``Origin`` are refused (SameSite=Strict
already keeps the cookie off them; this also stops login CSRF). These routes are HTML, so they
stay out of the OpenAPI schema.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.exc import IntegrityError

from server.deps import SessionDep, SettingsDep, StateDep
from server.models import Role
from server.web import html
from server.web.errors import PageError
from server.web.responses import FormFields, clear_cookie, html_response, local_path, redirect, same_origin
from server.web.session import COOKIE_NAME, COOKIE_PATH, SESSION_SECONDS, end_session, login_for_token, sign, verify
from server.web.urls import DASHBOARD, learner_url

router = APIRouter(include_in_schema=False)

_LIVE_SCRIPT = (Path(__file__).parent / "static" / "live.js").read_bytes()


@router.get("/login", response_class=HTMLResponse)
def login_form(next: str | None = None) -> Response:
    """The token form."""
    return html_response(html.login_page(next_path=local_path(next) or ""))


@router.post("/login", response_class=HTMLResponse)
def login(request: Request, form: FormFields, session: SessionDep, settings: SettingsDep) -> Response:
    """Check the token once; its owner gets a signed session cookie."""
    if not same_origin(request):
        raise PageError(
            403, "Cross-site request refused", "Log in from this site's own form.", link=("Log in", "/login")
        )
    if form is None:
        return html_response(html.login_page("Send the form as a normal web form (at most 4 KiB)."), 400)
    next_path = local_path(form.get("next")) or ""
    token = form.get("token", "").strip()
    if not token:
        return html_response(html.login_page("Enter your API token.", next_path), 400)
    found = login_for_token(session, token, settings.secret_bytes)
    if found is None:
        return html_response(html.login_page("That token is unknown or revoked.", next_path), 401)
    if found.narrowed:  # read-only or course-limited: the pages would reach further (web.session)
        return html_response(
            html.login_page(
                "That token is read-only or limited to one course; it works with the API only. "
                "Sign in with a full token.",
                next_path,
            ),
            403,
        )
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
def logout(request: Request, session: SessionDep, state: StateDep) -> Response:
    """End the session: its cookie is refused from now on, by every API process on this
    database and after restarts, even if replayed (and so is its form token); the browser
    forgets it. The API token itself stays valid."""
    if not same_origin(request):
        raise PageError(403, "Cross-site request refused", "Log out from this site's own page.")
    cookie = verify(request.cookies.get(COOKIE_NAME) or "", state.settings.secret_bytes)
    if cookie is not None:
        try:
            end_session(session, cookie)
            session.commit()
        except IntegrityError:  # the same cookie logged out at the same moment by another request
            session.rollback()
    response = redirect("/login")
    clear_cookie(response, request)
    return response


@router.get("/static/live.js")
def live_script() -> Response:
    """The pages' one script (same origin, so ``script-src 'self'`` allows it)."""
    return Response(
        _LIVE_SCRIPT,
        media_type="text/javascript; charset=utf-8",
        headers={"Cache-Control": "public, max-age=300", "X-Content-Type-Options": "nosniff"},
    )
