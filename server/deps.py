"""FastAPI dependencies as named types, so route signatures read like prose.

Authorization lives here once: ``CurrentUser`` rejects missing or bad tokens with 401 and a
request beyond the token's scope or course with 403 (``server.token_scope``, before any body is
validated), ``InstructorUser`` additionally requires an instructor or admin, ``AdminUser`` an
admin; ``SubmissionLimits`` refuses a learner's submission over a limit (``submissions.limits``).
``CurrentGrant`` is the same check, giving the token too (for routes about the caller's tokens).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from datetime import datetime
from typing import Annotated

from fastapi import Depends, Header, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from server import token_scope
from server.config import Settings
from server.errors import NotAllowed, NotAuthenticated, OutsideTokenScope
from server.models import Role, User
from server.state import AppState
from server.submissions.limits import SlidingWindow, check_submission_limits, parse_rate
from server.users.service import Grant, grant_for_token


def get_state(request: Request) -> AppState:
    """What the lifespan built: settings, engine, queue, workers."""
    state: AppState = request.app.state.grader
    return state


StateDep = Annotated[AppState, Depends(get_state)]


def get_settings(state: StateDep) -> Settings:
    """The running app's settings."""
    return state.settings


SettingsDep = Annotated[Settings, Depends(get_settings)]


def get_now(state: StateDep) -> datetime:
    """The current time by the app's clock (injectable, for course dates)."""
    return state.clock()


Now = Annotated[datetime, Depends(get_now)]


def get_db(state: StateDep) -> Iterator[Session]:
    """One session per request; services decide when to commit."""
    with state.session_factory() as session:
        yield session


SessionDep = Annotated[Session, Depends(get_db)]

# auto_error=False: we answer a missing header with our own 401 shape, not Starlette's 403.
_bearer = HTTPBearer(auto_error=False, description="An API token from `ppo-grader users add`.")

#: The bearer token as sent (or None), for a route that looks its user up itself (``authenticate``).
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


def authenticate(
    session: Session,
    settings: Settings,
    credentials: HTTPAuthorizationCredentials | None,
    request: Request,
    *,
    body_later: bool = False,
) -> Grant:
    """The bearer token and its owner, if it is live and the request within its reach: 401
    ``NotAuthenticated`` without a live token, 403 ``OutsideTokenScope`` for a method its scope
    refuses or another course (``server.token_scope``). Where the route's course is in its body,
    ``body_later`` says the caller checks it once read (``get_current_grant``); without it such a
    request of a course-limited token is refused."""
    if credentials is None or credentials.scheme.lower() != "bearer" or not credentials.credentials:
        raise NotAuthenticated()
    grant = grant_for_token(session, credentials.credentials, settings.secret_bytes)
    if grant is None:
        raise NotAuthenticated("The API token is unknown or revoked.")
    token_scope.check_method(grant, request.method)
    reach = token_scope.reach_of(request)
    if not token_scope.needs_body(grant, reach):
        token_scope.check_course(session, grant, request, reach, None)
    elif not body_later:
        raise OutsideTokenScope(
            "This token is limited to one course, and this route cannot check the course in its body."
        )
    return grant


async def get_current_grant(
    request: Request, session: SessionDep, settings: SettingsDep, credentials: Credentials
) -> Grant:
    """``authenticate``, off the event loop; then, for a course-limited token on a route whose
    course is in its body, the body read (``token_scope.read_body``) and its course checked."""
    grant = await run_in_threadpool(
        functools.partial(authenticate, session, settings, credentials, request, body_later=True)
    )
    reach = token_scope.reach_of(request)
    if token_scope.needs_body(grant, reach):
        body = await token_scope.read_body(request, settings)
        await run_in_threadpool(token_scope.check_course, session, grant, request, reach, body)
    return grant


CurrentGrant = Annotated[Grant, Depends(get_current_grant)]


async def get_current_user(grant: CurrentGrant) -> User:
    """The owner of the bearer token (``get_current_grant``'s checks passed; async: no thread for this)."""
    return grant.user


CurrentUser = Annotated[User, Depends(get_current_user)]


def get_instructor(user: CurrentUser) -> User:
    """The current user, if they are an instructor or admin; 403 otherwise."""
    if not Role(user.role).reads_everything:
        raise NotAllowed("This needs an instructor or admin account.")
    return user


InstructorUser = Annotated[User, Depends(get_instructor)]


def get_admin(user: CurrentUser) -> User:
    """The current user, if they are an admin; 403 otherwise."""
    if Role(user.role) is not Role.ADMIN:
        raise NotAllowed("This needs an admin account.")
    return user


AdminUser = Annotated[User, Depends(get_admin)]


def submission_window(request: Request, settings: SettingsDep) -> SlidingWindow:
    """The app's window, made on first use (one per app, never a module global)."""
    window: SlidingWindow | None = getattr(request.app.state, "submission_window", None)
    if window is None:
        window = SlidingWindow(*parse_rate(settings.RATE_LIMIT))
        request.app.state.submission_window = window
    return window


def enforce_submission_limits(
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    window: Annotated[SlidingWindow, Depends(submission_window)],
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key", include_in_schema=False)] = None,
) -> None:
    """Refuse a learner's new submission with 429 when over either limit."""
    check_submission_limits(user, session, settings, window, idempotency_key)


#: The route dependency that refuses a learner's submission over a limit (429), before the body is read.
SubmissionLimits = Depends(enforce_submission_limits)
