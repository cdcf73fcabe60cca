"""Regrades: a set of new verdicts for stored submissions, previewed, then applied or cancelled.

- ``RegradeSet``: which submissions an instructor asked to grade again (one exercise; a course,
  a learner, a submission may narrow it), its state and, once applied, the reason and the rule
  (``keep``: ``new`` takes the new verdict, ``higher`` the better of the two).
- ``RegradeResult``: one submission graded again into the set. Nothing learners see reads it.
- ``SupersededVerdict``: an applied regrade's old verdict of one submission (the submission row
  then carries the new one, so boards, statistics and gradebooks read it unchanged), with the
  set that replaced it: the submission's history, and what a learner is told.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Float,
    ForeignKey,
    Index,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base, UTCDateTime, utcnow
from server.vocabulary import RegradeState


class RegradeSet(Base):
    """One regrade: a preview until applied or cancelled."""

    __tablename__ = "regrade_sets"
    __table_args__ = (
        CheckConstraint("state IN ('grading', 'ready', 'applied', 'cancelled')", name="state"),
        CheckConstraint("keep IS NULL OR keep IN ('new', 'higher')", name="keep"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    exercise: Mapped[str] = mapped_column(String(64))
    #: Narrowing filters as asked (NULL: not narrowed).
    course_id: Mapped[int | None] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"))
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    submission_id: Mapped[int | None] = mapped_column(ForeignKey("submissions.id", ondelete="SET NULL"))
    #: False: only verdicts from an older content or grader version; True: every verdict.
    all_versions: Mapped[bool] = mapped_column(Boolean, default=False)
    state: Mapped[str] = mapped_column(String(16), default=RegradeState.GRADING)
    #: The versions the set was asked against (what the requesting process loaded).
    content_version: Mapped[str] = mapped_column(String(16))
    grader_version: Mapped[str] = mapped_column(String(16))
    requested_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    keep: Mapped[str | None] = mapped_column(String(8))
    reason: Mapped[str | None] = mapped_column(Text)
    applied_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    cancelled_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class RegradeResult(Base):
    """A stored submission graded again into a set: the new verdict, not yet live."""

    __tablename__ = "regrade_results"
    __table_args__ = (
        CheckConstraint("status IN ('queued', 'running', 'done')", name="status"),
        UniqueConstraint("set_id", "submission_id"),
        # The in-process queue's poll, and "is the set finished".
        Index("ix_regrade_results_set_id_status", "set_id", "status"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    set_id: Mapped[int] = mapped_column(ForeignKey("regrade_sets.id", ondelete="CASCADE"))
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    status: Mapped[str] = mapped_column(String(16), default="queued")
    attempts: Mapped[int] = mapped_column(default=0)
    verdict: Mapped[str | None] = mapped_column(String(32))
    score: Mapped[float | None] = mapped_column(Float)
    message: Mapped[str] = mapped_column(Text, default="")
    #: The checks as stored for a submission (server.grading.persistence.check_rows).
    checks: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    feedback: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    stdout: Mapped[str] = mapped_column(Text, default="")
    stderr: Mapped[str] = mapped_column(Text, default="")
    timings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    peak_memory_bytes: Mapped[int | None] = mapped_column(BigInteger)
    cpu_seconds: Mapped[float | None] = mapped_column(Float)
    content_version: Mapped[str | None] = mapped_column(String(16))
    grader_version: Mapped[str | None] = mapped_column(String(16))
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class SupersededVerdict(Base):
    """A submission's verdict before an applied regrade replaced it."""

    __tablename__ = "superseded_verdicts"

    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    set_id: Mapped[int] = mapped_column(ForeignKey("regrade_sets.id", ondelete="CASCADE"), index=True)
    verdict: Mapped[str | None] = mapped_column(String(32))
    score: Mapped[float | None] = mapped_column(Float)
    counted_score: Mapped[float | None] = mapped_column(Float)
    message: Mapped[str] = mapped_column(Text, default="")
    checks: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    feedback: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    content_version: Mapped[str] = mapped_column(String(16))
    grader_version: Mapped[str] = mapped_column(String(16))
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    #: What replaced it (the submission may be regraded again later).
    new_verdict: Mapped[str | None] = mapped_column(String(32))
    new_score: Mapped[float | None] = mapped_column(Float)
    new_counted_score: Mapped[float | None] = mapped_column(Float)
    superseded_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
