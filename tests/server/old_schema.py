"""Users made in a database still at an old revision (the upgrade tests): the models describe the
head's tables, so a token is written with the columns every revision has, not through the ORM."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.orm import Session

from server.models import Role, utcnow
from server.security import display_prefix, hash_token, new_token
from server.users.service import claim_user


def old_schema_user(session: Session, name: str, role: Role, pepper: bytes) -> tuple[int, str]:
    """A user and their token, as any revision's ``users`` and ``api_tokens`` can hold them."""
    user = claim_user(session, name, role)
    assert user is not None
    token = new_token()
    session.execute(
        text("INSERT INTO api_tokens (user_id, token_hash, prefix, created_at) VALUES (:u, :h, :p, :c)"),
        {"u": user.id, "h": hash_token(token, pepper), "p": display_prefix(token), "c": utcnow()},
    )
    return user.id, token
