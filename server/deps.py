"""FastAPI dependencies as named types, so route signatures read like prose.

Authorization lives here once: ``CurrentUser`` rejects missing or bad tokens with 401,
``InstructorUser`` additionally requires an instructor or admin, ``AdminUser`` an admin;
``SubmissionLimits`` refuses a learner's submission over a limit (``submissions.limits``).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Annotated

from fastapi import Depends, Header, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from server.config import Settings
from server.errors import NotAllowed, NotAuthenticated
from server.models import Role, User
from server.state import AppState
from server.submissions.limits import SlidingWindow, check_submission_limits, parse_rate
from server.users.service import user_for_token


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


def authenticate(session: Session, settings: Settings, credentials: HTTPAuthorizationCredentials | None) -> User:
    """The owner of the bearer token; 401 ``NotAuthenticated`` otherwise."""
    if credentials is None or credentials.scheme.lower() != "bearer" or not credentials.credentials:
        raise NotAuthenticated()
    user = user_for_token(session, credentials.credentials, settings.secret_bytes)
    if user is None:
        raise NotAuthenticated("The API token is unknown or revoked.")
    return user


def get_current_user(session: SessionDep, settings: SettingsDep, credentials: Credentials) -> User:
    """The owner of the bearer token; 401 ``NotAuthenticated`` otherwise."""
    return authenticate(session, settings, credentials)


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
