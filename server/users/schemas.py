"""Wire types for users."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from server.vocabulary import Role, TokenScope


class UserPublic(BaseModel):
    """What ``GET /me`` answers: never a token or its hash."""

    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    display_name: str
    role: Role


class UserCreate(BaseModel):
    """``POST /users``: instructors create learners, admins any role."""

    name: str = Field(min_length=1, max_length=64, examples=["alice"])
    display_name: str | None = Field(default=None, max_length=128)
    role: Role = Role.LEARNER


class UserWithToken(BaseModel):
    """A created user or a rotated token: the plaintext token appears here once, never again."""

    user: UserPublic
    token: str


class TokensRevoked(BaseModel):
    """``POST /users/{name}/tokens/revoke``."""

    user: str
    revoked: int


class TokenCreate(BaseModel):
    """``POST /me/tokens``: a token never wider than the one that asks (docs/security.md, "API tokens")."""

    scope: TokenScope | None = Field(
        default=None, description="`read` (GET, HEAD, OPTIONS only) or `full`; default: the asking token's."
    )
    course: str | None = Field(
        default=None,
        max_length=64,
        description="Limit it to this course (one of yours); default: the asking token's reach.",
    )
    label: str | None = Field(default=None, max_length=64, description="What you call it, shown in listings.")


class TokenPublic(BaseModel):
    """One of a user's tokens in a listing: its prefix, never its text."""

    prefix: str = Field(description="The token's first characters, to tell it apart (and to revoke it by).")
    scope: TokenScope
    course: str | None = Field(description="The one course it reaches; null: every course its owner may reach.")
    label: str | None
    created_at: datetime
    revoked_at: datetime | None
    current: bool = Field(description="Whether it is the token this request came with.")


class NewToken(BaseModel):
    """A token just made: the plaintext appears here once, never again."""

    token: str
    details: TokenPublic


class RosterRow(BaseModel):
    """One roster line: ``token`` when created (shown once), ``error`` when skipped."""

    line: int
    name: str
    display_name: str
    role: Role | None
    created: bool
    token: str | None
    error: str | None
    course: str | None = Field(default=None, description="The course the row's user was enrolled in, if any.")


class RosterReport(BaseModel):
    """``POST /users/import``: what happened to each line."""

    created: int
    enrolled: int = Field(default=0, description="Existing users enrolled in a course.")
    skipped: int
    rows: list[RosterRow]
