"""Wire types for users."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from server.models import Role


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
