"""What a page answers instead of itself, raised from a route or a dependency.

The JSON API raises ``server.errors.GraderError`` and answers ``{"error", "detail"}``; the HTML
pages raise these, and :func:`install_page_error_handlers` turns each into a page::

    LoginRequired        no live web session: the login form, which comes back here afterwards
    PageError            a short page that says one thing, with the viewer's header
    ├── PageNotFound     404, the same for what does not exist and what is someone else's
    └── PageBadRequest   400, says what was wrong

So a route reads as its happy path: ``WebUser`` / ``WebInstructor`` (``server.web.deps``) raise
``LoginRequired`` or ``PageNotFound`` before the route runs, and a route raises the rest.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse

from server.models import User
from server.web import html
from server.web.responses import clear_cookie, html_response, local_path, viewer_of

#: Why the login form is shown again when the browser sent a session cookie that no longer works.
SESSION_ENDED = "Your session has ended (logged out, expired, or its token was revoked). Log in again."


class LoginRequired(Exception):
    """The page needs a live web session. ``session_ended``: the browser sent a cookie that
    no longer works (logged out elsewhere, expired, token revoked), so the form says so and
    the dead cookie is cleared."""

    def __init__(self, *, session_ended: bool) -> None:
        super().__init__("login required")
        self.session_ended = session_ended


class PageError(Exception):
    """A short page instead of the one asked for: its status, title and text, who is looking
    (for the header; None before login) and where the page links on."""

    def __init__(
        self,
        status_code: int,
        title: str,
        text: str,
        viewer: User | None = None,
        link: tuple[str, str] = ("Back to the start", "/dashboard"),
    ) -> None:
        super().__init__(text)
        self.status_code, self.title, self.text, self.viewer, self.link = status_code, title, text, viewer, link


class PageNotFound(PageError):
    """404: nothing says whether the page exists or is someone else's."""

    def __init__(self, viewer: User | None, text: str = "There is no such page, or it is not yours to see.") -> None:
        super().__init__(404, "Not found", text, viewer)


class PageBadRequest(PageError):
    """400: a parameter the page cannot use, and what it must be."""

    def __init__(self, viewer: User | None, text: str) -> None:
        super().__init__(400, "Bad request", text, viewer)


def login_form_response(request: Request, exc: LoginRequired) -> HTMLResponse:
    """The login form in place of the page asked for (its address is kept: the form's ``next``
    brings the browser back here once logged in)."""
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    notice = SESSION_ENDED if exc.session_ended else None
    response = html_response(html.login_page(notice, local_path(here) or ""))
    if exc.session_ended:
        clear_cookie(response, request)
    return response


def page_error_response(exc: PageError) -> HTMLResponse:
    """The message page for ``exc``, with its status."""
    viewer = viewer_of(exc.viewer) if exc.viewer is not None else None
    return html_response(html.message_page(exc.title, exc.text, viewer, link=exc.link), exc.status_code)


def install_page_error_handlers(app: FastAPI) -> None:
    """One handler per class above, for every HTML route of ``app``."""

    @app.exception_handler(LoginRequired)
    async def login_required(request: Request, exc: LoginRequired) -> HTMLResponse:
        return login_form_response(request, exc)

    @app.exception_handler(PageError)
    async def page_error(_request: Request, exc: PageError) -> HTMLResponse:
        return page_error_response(exc)
