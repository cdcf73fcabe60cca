"""Submissions and their per-check results."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    Float,
    ForeignKey,
    Index,
    String,
    Text,
    UniqueConstraint,
    true,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from exercises.versions import UNKNOWN_VERSION
from server.models.base import Base, UTCDateTime, utcnow
from server.models.course import DEFAULT_COURSE_ID
from server.vocabulary import Status

if TYPE_CHECKING:  # resolved by name through the mapper registry at run time
    from server.models.user import User


class Submission(Base):
    """One learner file sent for one exercise, and what the judge said about it."""

    __tablename__ = "submissions"
    __table_args__ = (
        CheckConstraint("status IN ('queued', 'running', 'done')", name="status"),
        UniqueConstraint("user_id", "idempotency_key"),
        # Workers and queue_position scan queued rows in id order.
        Index("ix_submissions_status_id", "status", "id"),
        # A learner's history per exercise, newest first.
        Index("ix_submissions_user_id_exercise_created_at", "user_id", "exercise", "created_at"),
        # Speed board, stats, best_scores backfill: one course's rows of one exercise grouped
        # by learner (covering; migration 0006 put the course first).
        Index(
            "ix_submissions_course_id_exercise_user_id_covering",
            "course_id",
            "exercise",
            "user_id",
            "verdict",
            "score",
            "created_at",
        ),
        # The per-learner cap on queued submissions.
        Index("ix_submissions_user_id_status", "user_id", "status"),
        # Attempt limits and per-course histories: one learner's rows for one course's exercise.
        Index("ix_submissions_course_id_user_id_exercise", "course_id", "user_id", "exercise"),
        # The latest release date a withdrawn exercise's submissions state, one index seek
        # (server.courses.feedback_policy: boards of an exercise no longer in the set).
        Index(
            "ix_submissions_course_id_exercise_policy_due",  # within PostgreSQL's 63 characters
            "course_id",
            "exercise",
            "feedback_policy",
            "feedback_due_at",
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    #: The course it was submitted to (migration 0006 put older rows in the default course).
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"), default=DEFAULT_COURSE_ID)
    exercise: Mapped[str] = mapped_column(String(64))
    source: Mapped[str] = mapped_column(Text)
    source_sha256: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16), default=Status.QUEUED)
    verdict: Mapped[str | None] = mapped_column(String(32))
    #: The raw score, as the judge gave it; never changed by a late policy.
    score: Mapped[float | None] = mapped_column(Float)
    #: Seconds past the learner's due date when it was submitted; NULL when on time.
    late_seconds: Mapped[int | None] = mapped_column()
    #: The set's feedback policy and due date (before extensions) this submission is under:
    #: written when it is accepted and again whenever the exercise is published, so they are
    #: the set's while it exists and its last ones once it is gone (unpublished). What decides
    #: the learner's view then (``server.courses.feedback_policy``): visibility never falls
    #: back to showing everything because a set entry was deleted. NULL: no set entry ever
    #: (the default course's open exercises; rows an unpublished set left before migration 0019).
    feedback_policy: Mapped[str | None] = mapped_column(String(32))
    feedback_due_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    #: Percent of the raw score the late policy takes off, fixed when it was accepted.
    penalty_percent: Mapped[float] = mapped_column(Float, default=0.0)
    #: ``score`` after the penalty: what boards and gradebooks count. NULL unless graded.
    counted_score: Mapped[float | None] = mapped_column(Float)
    #: What the boards rank by: the score that counts of the confirmed checks only (no
    #: self-reported check; server.courses.counted.submission_board). NULL unless graded, and for verdicts
    #: stored before migration 0011, which rank by ``counted_score``.
    board_score: Mapped[float | None] = mapped_column(Float)
    message: Mapped[str] = mapped_column(Text, default="")
    stdout: Mapped[str] = mapped_column(Text, default="")
    stderr: Mapped[str] = mapped_column(Text, default="")
    timings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    peak_memory_bytes: Mapped[int | None] = mapped_column(BigInteger)
    cpu_seconds: Mapped[float | None] = mapped_column(Float)
    #: The exercise's content version and the grader's version that produced the verdict
    #: (exercises/versions.py); "unknown" for verdicts stored before migration 0013.
    content_version: Mapped[str] = mapped_column(String(16), default=UNKNOWN_VERSION)
    grader_version: Mapped[str] = mapped_column(String(16), default=UNKNOWN_VERSION)
    #: Root causes, diagnosis and summary (exercises/feedback.py); NULL before migration 0005.
    feedback: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    #: Base name of the file the learner submitted, shown in tracebacks.
    filename: Mapped[str | None] = mapped_column(String(128))
    attempts: Mapped[int] = mapped_column(default=0)
    idempotency_key: Mapped[str | None] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())

    user: Mapped[User] = relationship()
    checks: Mapped[list[CheckResult]] = relationship(
        back_populates="submission",
        order_by="CheckResult.position",
        cascade="all, delete-orphan",
    )


#: Width of the id columns: ``"<slug>/<id>"`` with a slug of at most 64 characters
#: (server.grading.sanitize.ID_CHARS, which stores nothing wider).
ID_CHARS = 160


class CheckResult(Base):
    """The outcome of one named check of one submission."""

    __tablename__ = "check_results"
    # Per-check failure rates for one exercise's submissions, from the index alone (grouped by
    # id, or by the sentence for rows stored before ids: migration 0007).
    __table_args__ = (
        Index("ix_check_results_submission_id_check_id_name_passed", "submission_id", "check_id", "name", "passed"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    #: The check's sentence when it was graded (display text; the catalogue's current one is shown).
    name: Mapped[str] = mapped_column(String(128))
    #: The check's stable id, ``"<slug>/<check>"``; NULL for rows migration 0007 could not match.
    check_id: Mapped[str | None] = mapped_column(String(ID_CHARS))
    weight: Mapped[float] = mapped_column(Float)
    passed: Mapped[bool]
    message: Mapped[str] = mapped_column(Text, default="")
    #: The named mistake's title when it was graded (display text).
    mistake_title: Mapped[str | None] = mapped_column(Text)
    #: The named mistake's stable id, ``"<slug>/<mistake>"``; what statistics group by.
    mistake_id: Mapped[str | None] = mapped_column(String(ID_CHARS))
    #: True unless the judge confirmed this check's evidence (``CheckOutcome.self_reported``,
    #: stored as the judge said it): a self-reported check earns no board place. True for a row
    #: written without the judge's word (migration 0020 keeps only known confirmed checks false).
    self_reported: Mapped[bool] = mapped_column(default=True, server_default=true())
    position: Mapped[int]

    submission: Mapped[Submission] = relationship(back_populates="checks")
