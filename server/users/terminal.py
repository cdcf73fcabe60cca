"""The "Use from a terminal" page: a signed-in user's own API token, for ``ppo-submit`` or a notebook.

A learner who arrives from an LMS (LTI) never saw a token: their web session was made by the
launch. ``GET /dashboard/terminal`` says how the command line and notebooks sign in, and its
button (``POST /dashboard/terminal``: the session's form token and the ``Origin`` check, as
every form that changes something) makes a new token and shows it this once, with the exact
``ppo-submit login`` line. The user's other tokens, and so this web session, stay valid;
``ppo-grader users revoke`` (or rotating) ends them all.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from server.deps import SessionDep, SettingsDep
from server.users.service import issue_token
from server.web.deps import WebUser
from server.web.errors import PageError
from server.web.html import Viewer, e, page
from server.web.responses import FormFields, html_response, same_origin, viewer_of
from server.web.session import COOKIE_NAME, form_token, form_token_matches

router = APIRouter(include_in_schema=False)

PATH = "/dashboard/terminal"


def _page(request: Request, viewer: Viewer, csrf: str, token: str | None = None) -> str:
    server = str(request.base_url).rstrip("/")
    shown = (
        f'<p class="callout">Your new token (shown this once; store it now):</p><pre id="new-token"><code>{e(token)}</code></pre>'
        f'<p>In a terminal:</p><pre id="login-line"><code>ppo-submit login --server {e(server)} --token {e(token)}</code></pre>'
        f"<p>In a notebook (then <code>%load_ext ppo_submit</code>):</p><pre><code>%env PPO_GRADER_URL={e(server)}\n"
        f"%env PPO_GRADER_TOKEN={e(token)}</code></pre>"
        if token
        else ""
    )
    body = (
        "<h1>Use from a terminal</h1>"
        "<p><code>ppo-submit</code> and the notebook extension sign in with a personal API token. "
        "Make one here; it is yours alone and works until you or an instructor revoke it.</p>"
        f"{shown}"
        f'<form method="post" action="{PATH}"><input type="hidden" name="csrf" value="{e(csrf)}">'
        '<button type="submit" id="make-token">Make a new token</button></form>'
        '<p class="muted">Making a token does not end your other tokens or this web session.</p>'
    )
    return page("Use from a terminal", body, viewer)


@router.get(PATH)
def terminal_page(request: Request, settings: SettingsDep, user: WebUser) -> Response:
    """How to sign in from a terminal, and the button that makes a token."""
    csrf = form_token(request.cookies.get(COOKIE_NAME) or "", settings.secret_bytes)
    return html_response(_page(request, viewer_of(user), csrf))


@router.post(PATH)
def make_token(
    request: Request, form: FormFields, session: SessionDep, settings: SettingsDep, user: WebUser
) -> Response:
    """A new token for the signed-in user, shown once."""
    cookie = request.cookies.get(COOKIE_NAME)
    if not same_origin(request) or not form_token_matches((form or {}).get("csrf"), cookie, settings.secret_bytes):
        raise PageError(
            403, "No token made", "Make the token from its page (reload it and try again).", user, link=("Back", PATH)
        )
    token = issue_token(session, user, settings.secret_bytes)
    session.commit()
    csrf = form_token(cookie or "", settings.secret_bytes)
    return html_response(_page(request, viewer_of(user), csrf, token))
