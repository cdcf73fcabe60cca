"""Users and their API tokens."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from server.models.base import Base, UTCDateTime, utcnow
from server.vocabulary import TokenScope


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
    """A bearer token, stored only as an HMAC so a database leak yields no usable token.

    ``scope`` and ``course_id`` narrow it below its owner (``server.token_scope``): a ``read``
    token only reads; one with a course reaches that course alone (NULL: every course its owner
    may reach). Both are fixed when it is issued."""

    __tablename__ = "api_tokens"
    __table_args__ = (CheckConstraint("scope IN ('full', 'read')", name="scope"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    # The first characters of the token, so a user can tell their tokens apart.
    prefix: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    scope: Mapped[str] = mapped_column(String(16), default=TokenScope.FULL.value, server_default=TokenScope.FULL.value)
    # Deleting the course deletes its tokens: never a token that widens to every course.
    course_id: Mapped[int | None] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"))
    # What its owner calls it ("laptop"), shown in listings.
    label: Mapped[str | None] = mapped_column(String(64))

    @property
    def unlimited(self) -> bool:
        """Whether it may do all its owner may (full scope, every course): what a web session needs."""
        return self.scope == TokenScope.FULL.value and self.course_id is None

    user: Mapped[User] = relationship(back_populates="tokens")


class EndedSession(Base):
    """A web session logged out before its cookie expired: the cookie's nonce, refused from
    then on by every API process (``server.web.session``). Kept only until the cookie would
    have expired anyway (``expires_at``), when it is pruned: the table holds at most the
    logouts of one session's lifetime, and only a live session can log out."""

    __tablename__ = "ended_sessions"

    nonce: Mapped[str] = mapped_column(String(64), primary_key=True)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
