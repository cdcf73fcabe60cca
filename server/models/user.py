"""Users and their API tokens."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import CheckConstraint, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from server.models.base import Base, UTCDateTime, utcnow


class Role(StrEnum):
    """Closed list of roles."""

    LEARNER = "learner"
    INSTRUCTOR = "instructor"
    ADMIN = "admin"

    @property
    def reads_everything(self) -> bool:
        """Instructors and admins may read every learner's submissions."""
        return self is not Role.LEARNER

    @property
    def submissions_limited(self) -> bool:
        """Only learners' submissions are limited (the rate limit, the cap on waiting ones):
        instructors and admins try exercises out and load fixtures."""
        return self is Role.LEARNER


class User(Base):
    """Someone who submits (learner) or teaches (instructor, admin)."""

    __tablename__ = "users"
    __table_args__ = (CheckConstraint("role IN ('learner', 'instructor', 'admin')", name="role"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    display_name: Mapped[str] = mapped_column(String(128))
    role: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)

    tokens: Mapped[list[ApiToken]] = relationship(back_populates="user")


class ApiToken(Base):
    """A bearer token, stored only as an HMAC so a database leak yields no usable token."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    # The first characters of the token, so a user can tell their tokens apart.
    prefix: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())

    user: Mapped[User] = relationship(back_populates="tokens")


class EndedSession(Base):
    """A web session logged out before its cookie expired: the cookie's nonce, refused from
    then on by every API process (``server.web.session``). Kept only until the cookie would
    have expired anyway (``expires_at``), when it is pruned: the table holds at most the
    logouts of one session's lifetime, and only a live session can log out."""

    __tablename__ = "ended_sessions"

    nonce: Mapped[str] = mapped_column(String(64), primary_key=True)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
