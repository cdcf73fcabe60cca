"""``/me`` and user management: create, list, import a roster, revoke and rotate tokens.

Rules (``service.may_manage``/``may_create``): everyone may rotate or revoke their own
tokens; instructors manage learners; admins manage everyone. A user the caller may not
manage answers 404, like a missing one.

``/me/tokens``: the caller's own tokens, through the token they call with (``CurrentGrant``):
list them, make one no wider than it (``service.issue_narrower``), revoke one by its prefix.
A course-limited token sees and revokes only its course's tokens (``server.token_scope``).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, status
from fastapi.concurrency import run_in_threadpool

from server.courses.service import readable_course, roster_enroller
from server.deps import CurrentGrant, CurrentUser, InstructorUser, SessionDep, SettingsDep
from server.errors import InvalidRoster, NotAllowed, SourceTooLarge
from server.openapi import errors
from server.users import service
from server.users.schemas import (
    NewToken,
    RosterReport,
    RosterRow,
    TokenCreate,
    TokenPublic,
    TokensRevoked,
    UserCreate,
    UserPublic,
    UserWithToken,
)

router = APIRouter(tags=["users"])

ROSTER_MAX_BYTES = 1024 * 1024


@router.get("/me", response_model=UserPublic, responses=errors(401))
def read_me(user: CurrentUser) -> UserPublic:
    """The authenticated user."""
    return UserPublic.model_validate(user)


def _token_public(listing: service.TokenListing, grant: service.Grant) -> TokenPublic:
    token = listing.token
    return TokenPublic(
        prefix=token.prefix,
        scope=token.scope,  # type: ignore[arg-type]
        course=listing.course,
        label=token.label,
        created_at=token.created_at,
        revoked_at=token.revoked_at,
        current=token.id == grant.token.id,
    )


@router.get("/me/tokens", response_model=list[TokenPublic], responses=errors(401))
def list_my_tokens(grant: CurrentGrant, session: SessionDep) -> list[TokenPublic]:
    """Your tokens, live and revoked, oldest first (a course-limited token: its course's only)."""
    listings = service.list_tokens(session, grant.user, grant.token.course_id)
    return [_token_public(listing, grant) for listing in listings]


@router.post(
    "/me/tokens",
    status_code=status.HTTP_201_CREATED,
    response_model=NewToken,
    responses=errors(
        401,
        403,
        404,
        notes={
            403: "`OutsideTokenScope`: wider than the token you call with (a read-only one makes none)",
            404: "`CourseNotFound`: not one of your courses",
        },
    ),
)
def issue_my_token(payload: TokenCreate, grant: CurrentGrant, session: SessionDep, settings: SettingsDep) -> NewToken:
    """Make yourself a token, shown this once: read-only and/or limited to one of your courses,
    never wider than the token you call with (left out, scope and course are that token's)."""
    course_id = None if payload.course is None else readable_course(session, grant.user, payload.course).id
    token, row = service.issue_narrower(
        session, grant, settings.secret_bytes, scope=payload.scope, course_id=course_id, label=payload.label
    )
    session.commit()
    return NewToken(token=token, details=_token_public(service.listing_of(session, row), grant))


@router.delete(
    "/me/tokens/{prefix}",
    response_model=TokenPublic,
    responses=errors(401, 404, 409, notes={404: "`TokenNotFound`: no live token of yours with this prefix"}),
)
def revoke_my_token(
    prefix: Annotated[str, Path(min_length=4, max_length=100, description="The token's listed prefix.")],
    grant: CurrentGrant,
    session: SessionDep,
) -> TokenPublic:
    """Revoke one of your tokens by its prefix (this one too); its web sessions end with it."""
    row = service.revoke_token(session, grant.user, prefix, grant.token.course_id)
    session.commit()
    return _token_public(service.listing_of(session, row), grant)


@router.get("/users", response_model=list[UserPublic], responses=errors(401, 403))
def list_users(_instructor: InstructorUser, session: SessionDep) -> list[UserPublic]:
    """Every user, by name (instructors and admins)."""
    return [UserPublic.model_validate(u) for u in service.list_users(session)]


@router.post(
    "/users",
    status_code=status.HTTP_201_CREATED,
    response_model=UserWithToken,
    responses=errors(401, 403, 409, 422),
)
def create_user(
    payload: UserCreate, actor: InstructorUser, session: SessionDep, settings: SettingsDep
) -> UserWithToken:
    """Create one user; the answer carries their token, shown this once."""
    if not service.may_create(actor, payload.role):
        raise NotAllowed(f"You may not create {payload.role.value} accounts.")
    created = service.create_user(session, payload.name, payload.role, settings.secret_bytes, payload.display_name)
    session.commit()
    return UserWithToken(user=UserPublic.model_validate(created.user), token=created.token)


@router.post(
    "/users/import",
    response_model=RosterReport,
    responses=errors(401, 403, 413, 422),
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"text/csv": {"schema": {"type": "string", "example": "name,display_name\nalice,Alice A.\n"}}},
        }
    },
)
async def import_roster(
    request: Request,
    actor: InstructorUser,
    session: SessionDep,
    settings: SettingsDep,
    course: Annotated[str | None, Query(max_length=64, description="Enroll every row in this course.")] = None,
) -> RosterReport:
    """Create users from a CSV roster (``name,display_name[,role][,course]``, header row required).

    Each created user's token is in the answer, once. Duplicates and invalid rows are
    reported per line, never fatal. With ``course=`` or a ``course`` column, every row's
    user is enrolled in that course (one the caller teaches), existing users included.
    """
    body = await request.body()
    if len(body) > ROSTER_MAX_BYTES:
        raise SourceTooLarge(f"The roster is over {ROSTER_MAX_BYTES} bytes.")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidRoster("The roster is not UTF-8 text.") from None

    def create_all() -> list[service.RosterOutcome]:
        enroller = None
        if course is not None or "course" in _header(text):
            enroller = roster_enroller(session, actor, course)
        outcomes = service.import_roster(session, text, settings.secret_bytes, actor, enroller)
        session.commit()
        return outcomes

    # thousands of rows of hashing and inserts: off the event loop, like the sync routes
    return roster_report(await run_in_threadpool(create_all))


def _header(text: str) -> list[str]:
    """The roster's header cells, lower-cased (to see whether it has a ``course`` column)."""
    first = text.lstrip("\ufeff").split("\n", 1)[0]
    return [cell.strip().strip('"').lower() for cell in first.split(",")]


def roster_report(outcomes: list[service.RosterOutcome]) -> RosterReport:
    """The wire form of an import."""
    rows = [
        RosterRow(
            line=o.line,
            name=o.name,
            display_name=o.display_name,
            role=o.role,
            created=o.token is not None,
            token=o.token,
            error=o.error,
            course=o.course,
        )
        for o in outcomes
    ]
    created = sum(r.created for r in rows)
    enrolled = sum(r.course is not None and not r.created for r in rows)
    return RosterReport(created=created, enrolled=enrolled, skipped=len(rows) - created - enrolled, rows=rows)


@router.post("/users/{name}/tokens/revoke", response_model=TokensRevoked, responses=errors(401, 404))
def revoke_tokens(name: str, actor: CurrentUser, session: SessionDep) -> TokensRevoked:
    """Revoke every token of ``name`` (yourself, or a user you manage)."""
    user = service.managed_user(session, actor, name)
    revoked = service.revoke_tokens(session, user)
    session.commit()
    return TokensRevoked(user=user.name, revoked=revoked)


@router.post("/users/{name}/tokens/rotate", response_model=UserWithToken, responses=errors(401, 404))
def rotate_token(name: str, actor: CurrentUser, session: SessionDep, settings: SettingsDep) -> UserWithToken:
    """Revoke every token of ``name`` and issue a new one, shown this once."""
    user = service.managed_user(session, actor, name)
    token, _revoked = service.rotate_token(session, user, settings.secret_bytes)
    session.commit()
    return UserWithToken(user=UserPublic.model_validate(user), token=token)
