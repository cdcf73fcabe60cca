"""Similarity runs, the learner pairs they rank, and instructors' review marks.

A run compares a course's learners (each one's latest and best submission per exercise,
``server.similarity``) in the background; it stores at most ``MAX_STORED_PAIRS`` pairs.
Review marks belong to the (course, pair), not to a run, so they survive a recomputation.
Nothing here is ever shown to learners, and nothing here changes a score.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, CheckConstraint, Float, ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base, UTCDateTime, utcnow


class RunStatus(StrEnum):
    """Closed list of a similarity run's states."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class ReviewMark(StrEnum):
    """Closed list of an instructor's marks on a pair."""

    FINE = "fine"
    CONCERN = "concern"


class SimilarityRun(Base):
    """One computation over a course: requested by an instructor, or after a due date."""

    __tablename__ = "similarity_runs"
    __table_args__ = (
        CheckConstraint("status IN ('queued', 'running', 'done', 'failed')", name="status"),
        CheckConstraint("reason IN ('request', 'due')", name="reason"),
        Index("ix_similarity_runs_course_id_id", "course_id", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(16), default=RunStatus.QUEUED)
    #: ``request`` (an instructor asked) or ``due`` (a due date of the course's set passed).
    reason: Mapped[str] = mapped_column(String(16), default="request")
    requested_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    requested_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    #: What was compared and how: exercises, learners, submissions, the engine's tuning.
    summary: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    #: Why a run failed (for the instructor; never learner text).
    message: Mapped[str] = mapped_column(Text, default="")


class SimilarityPair(Base):
    """One ranked pair of one run (``learner_a_id < learner_b_id``).

    ``exercises`` maps each exercise slug on which the pair is similar to
    ``{"similarity", "submission_a", "submission_b", "shared", "spans_a", "spans_b"}``;
    spans are ``[first_line, last_line]`` of the matching code, capped per side.
    """

    __tablename__ = "similarity_pairs"
    __table_args__ = (Index("ix_similarity_pairs_run_id_score", "run_id", "score"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("similarity_runs.id", ondelete="CASCADE"))
    learner_a_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    learner_b_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    #: The sum over the course's exercises of the pair's similarity (0..1 each).
    score: Mapped[float] = mapped_column(Float)
    #: On how many exercises the pair is at least "similar" (``Tuning.similar_at``).
    similar_on: Mapped[int] = mapped_column(default=0)
    exercises: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class SimilarityReview(Base):
    """An instructor's mark on a pair of a course: ``fine`` or ``concern``."""

    __tablename__ = "similarity_reviews"
    __table_args__ = (CheckConstraint("mark IN ('fine', 'concern')", name="mark"),)

    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"), primary_key=True)
    learner_a_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    learner_b_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    mark: Mapped[str] = mapped_column(String(16))
    reviewer_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    reviewed_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
