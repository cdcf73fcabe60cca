"""User and token rules: creation, lookup by token, the first-start instructor."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from server.errors import GraderError, UserAlreadyExists
from server.models import ApiToken, Role, User
from server.security import display_prefix, hash_token, new_token

NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
FIRST_INSTRUCTOR_NAME = "instructor"


@dataclass(frozen=True)
class NewUser:
    """A created user and the plaintext token that exists only in this object."""

    user: User
    token: str


def create_user(
    session: Session,
    name: str,
    role: Role,
    pepper: bytes,
    display_name: str | None = None,
) -> NewUser:
    """Create a user with one token; the caller commits. Raises ``UserAlreadyExists``."""
    if not NAME_PATTERN.match(name):
        raise GraderError(
            "User names are 1-64 characters of a-z, 0-9, '.', '_' or '-', starting with a "
            f"letter or digit; got {name!r}.",
            status_code=422,
            error_name="InvalidUserName",
        )
    if session.scalar(select(User.id).where(User.name == name)) is not None:
        raise UserAlreadyExists(f"A user named {name!r} exists already.")
    user = User(name=name, display_name=display_name or name, role=Role(role).value)
    session.add(user)
    token = issue_token(session, user, pepper)
    try:
        session.flush()
    except IntegrityError as exc:  # lost a race with a concurrent create
        raise UserAlreadyExists(f"A user named {name!r} exists already.") from exc
    return NewUser(user=user, token=token)


def issue_token(session: Session, user: User, pepper: bytes) -> str:
    """Add a new token for ``user`` and return its plaintext (never stored)."""
    token = new_token()
    session.add(ApiToken(user=user, token_hash=hash_token(token, pepper), prefix=display_prefix(token)))
    return token


def user_for_token(session: Session, token: str, pepper: bytes) -> User | None:
    """The owner of a live (unrevoked) token, or None."""
    return session.scalar(
        select(User)
        .join(ApiToken, ApiToken.user_id == User.id)
        .where(ApiToken.token_hash == hash_token(token, pepper), ApiToken.revoked_at.is_(None))
    )


def list_users(session: Session) -> list[User]:
    """Every user, by name."""
    return list(session.scalars(select(User).order_by(User.name)))


def ensure_first_instructor(session: Session, pepper: bytes) -> NewUser | None:
    """On an empty database, create the ``instructor`` account; otherwise do nothing."""
    if session.scalar(select(func.count()).select_from(User)):
        return None
    return create_user(session, FIRST_INSTRUCTOR_NAME, Role.INSTRUCTOR, pepper, "Instructor")
