"""The web pages' login session: a signed cookie, never the token itself.

The cookie holds ``v2.<user id>.<token id>.<expires>.<nonce>.<signature>``, the signature an
HMAC-SHA256 under a key derived from SECRET_KEY (so it is useless for anything else the
secret signs). The nonce is random per login, so two logins never share a cookie (nor the
form token derived from it). Every request re-checks that the token row is still unrevoked,
so revoking or rotating a token ends its web sessions too, and changing SECRET_KEY ends all
of them. Logging out records the cookie's nonce as ended (:func:`end_session`: a row of
``ended_sessions``, kept until the cookie would have expired anyway), so the same cookie,
replayed, is refused, after a restart too and by every API process on the database.

The cookie's path is ``/`` because the pages live under ``/leaderboard`` and ``/dashboard``;
the JSON API never reads it (it takes bearer tokens only), so it grants nothing there.

Only an unlimited token (scope ``full``, every course) opens a web session: the pages' forms
change things and show every course of their user, so a read-only or course-limited token
(``server.token_scope``) would gain there what the API refuses it. :func:`login_for_token`
answers such a token as ``Login.narrowed`` (the login form says why), and
:func:`user_for_cookie` accepts a cookie only while its token row is unlimited.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from server.models import ApiToken, EndedSession, TokenScope, User
from server.security import hash_token

COOKIE_NAME = "ppo_grader_session"
COOKIE_PATH = "/"
SESSION_SECONDS = 12 * 3600
_VERSION = "v2"
_KEY_LABEL = b"ppo-grader/web-session/v1"
_FORM_LABEL = b"ppo-grader/web-form/v1"
_NOTICE_LABEL = b"ppo-grader/web-notice/v1"


@dataclass(frozen=True)
class Login:
    """A live token and its owner; ``narrowed`` when the token is read-only or course-limited,
    so it opens no web session."""

    user: User
    token_id: int
    narrowed: bool = False


def _key(secret: bytes) -> bytes:
    return hmac.new(secret, _KEY_LABEL, hashlib.sha256).digest()


def _signature(secret: bytes, payload: str) -> str:
    digest = hmac.new(_key(secret), payload.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def sign(user_id: int, token_id: int, secret: bytes, now: float | None = None) -> str:
    """A new cookie value for this user and token, valid for ``SESSION_SECONDS``; each call's
    is different (a random nonce), so each login is a session of its own."""
    expires = int((time.time() if now is None else now) + SESSION_SECONDS)
    payload = f"{_VERSION}.{user_id}.{token_id}.{expires}.{secrets.token_urlsafe(16)}"
    return f"{payload}.{_signature(secret, payload)}"


@dataclass(frozen=True)
class Cookie:
    """What a well-signed, unexpired cookie says."""

    user_id: int
    token_id: int
    expires: int
    nonce: str


def verify(value: str, secret: bytes, now: float | None = None) -> Cookie | None:
    """What a well-signed, unexpired cookie value says; None otherwise."""
    parts = value.split(".")
    if len(parts) != 6 or parts[0] != _VERSION or not all(p.isdigit() and len(p) <= 20 for p in parts[1:4]):
        return None
    if not 0 < len(parts[4]) <= 64:
        return None
    payload = ".".join(parts[:5])
    if not hmac.compare_digest(parts[5].encode(), _signature(secret, payload).encode()):
        return None
    if int(parts[3]) <= (time.time() if now is None else now):
        return None
    return Cookie(int(parts[1]), int(parts[2]), int(parts[3]), parts[4])


def _instant(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def end_session(session: Session, cookie: Cookie, now: float | None = None) -> None:
    """Refuse ``cookie`` from now on, in every process that reads this database, and prune the
    ended sessions whose cookies have expired by now (refused by :func:`verify` anyway). So the
    table holds at most the logouts of one cookie's lifetime (``SESSION_SECONDS``), and only a
    live session can log out: a stranger cannot fill it. The caller commits; logging out twice
    is once."""
    session.execute(
        delete(EndedSession).where(EndedSession.expires_at <= _instant(time.time() if now is None else now))
    )
    if session.get(EndedSession, cookie.nonce) is None:
        session.add(EndedSession(nonce=cookie.nonce, expires_at=_instant(cookie.expires)))
    session.flush()


def form_token(cookie: str, secret: bytes) -> str:
    """The token a page's form carries for this session (a POST that changes something checks
    it, beside the ``Origin`` check): an HMAC of the session cookie, so a page of another site,
    which cannot read the cookie, cannot forge it; it ends with the session."""
    key = hmac.new(secret, _FORM_LABEL, hashlib.sha256).digest()
    digest = hmac.new(key, cookie.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def notice_token(user_id: int, notice: str, secret: bytes) -> str:
    """The signature a redirect carries beside the notice it asks the next page to show
    ("x is now a TA of this course"): an HMAC of the notice and who it is for, so a link made
    anywhere else cannot make a page announce what did not happen (nor show one user's notice
    to another)."""
    key = hmac.new(secret, _NOTICE_LABEL, hashlib.sha256).digest()
    digest = hmac.new(key, f"{user_id}\x00{notice}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def notice_token_matches(sent: str | None, user_id: int, notice: str, secret: bytes) -> bool:
    """Whether ``sent`` is :func:`notice_token` of this notice for this user."""
    if not sent:
        return False
    return hmac.compare_digest(sent.encode(), notice_token(user_id, notice, secret).encode())


def form_token_matches(sent: str | None, cookie: str | None, secret: bytes) -> bool:
    """Whether a form's token is the one :func:`form_token` gives this session."""
    if not sent or not cookie or len(sent) > 100:
        return False
    return hmac.compare_digest(sent.encode(), form_token(cookie, secret).encode())


def login_for_token(session: Session, token: str, pepper: bytes) -> Login | None:
    """The live token matching ``token`` (any role), or None if unknown or revoked."""
    row = session.execute(
        select(User, ApiToken)
        .join(ApiToken, ApiToken.user_id == User.id)
        .where(ApiToken.token_hash == hash_token(token, pepper), ApiToken.revoked_at.is_(None))
    ).first()
    return None if row is None else Login(user=row[0], token_id=row[1].id, narrowed=not row[1].unlimited)


def user_for_cookie(session: Session, value: str | None, secret: bytes) -> User | None:
    """The user (any role) a valid cookie belongs to, while its token is unrevoked and
    unlimited and the session was not logged out (no ``ended_sessions`` row for its nonce):
    one query."""
    if not value:
        return None
    cookie = verify(value, secret)
    if cookie is None:
        return None
    ended = select(EndedSession.nonce).where(EndedSession.nonce == cookie.nonce).exists()
    return session.scalar(
        select(User)
        .join(ApiToken, ApiToken.user_id == User.id)
        .where(
            User.id == cookie.user_id,
            ApiToken.id == cookie.token_id,
            ApiToken.revoked_at.is_(None),
            ApiToken.scope == TokenScope.FULL.value,
            ApiToken.course_id.is_(None),
            ~ended,
        )
    )
