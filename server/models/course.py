"""Courses, who is enrolled in them, the exercises each publishes, and per-learner extensions.

Times are stored in UTC; a course's ``time_zone`` (an IANA name read with ``zoneinfo``) is
only how they are shown. The default course (id 1, made by migration 0006) holds everything
that existed before courses: every user belongs to it implicitly and every catalogue
exercise is open in it without dates, unless an instructor publishes a set entry for it.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, Float, ForeignKey, Index, String, false
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base, UTCDateTime, utcnow

#: Made by migration 0006; existing submissions and boards live here.
DEFAULT_COURSE_ID = 1
DEFAULT_COURSE_SLUG = "default"


class Course(Base):
    """One course or section: its own roster, exercise set, boards and gradebook."""

    __tablename__ = "courses"

    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    title: Mapped[str] = mapped_column(String(200))
    time_zone: Mapped[str] = mapped_column(String(64), default="UTC")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    #: Learners see classmates' display names on the boards (off: pseudonyms, the default;
    #: instructors always see names). Set per course by its instructor (migration 0012).
    board_real_names: Mapped[bool] = mapped_column(default=False, server_default=false())

    @property
    def is_default(self) -> bool:
        """The course every user is in without enrollment."""
        return self.id == DEFAULT_COURSE_ID


class Enrollment(Base):
    """A user in a course, as a learner or as one of its instructors."""

    __tablename__ = "enrollments"
    __table_args__ = (CheckConstraint("role IN ('learner', 'instructor')", name="role"),)

    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True, index=True)
    role: Mapped[str] = mapped_column(String(16))


class SetEntry(Base):
    """One exercise published in a course's exercise set, with its dates and rules.

    - not listed and not accepted (for learners) before ``release_at`` (NULL: already open);
    - accepted and flagged late after ``due_at`` (NULL: never late);
    - refused after ``close_at`` (NULL: never closed);
    - ``penalty_percent`` of the raw score is taken off the score that counts per started
      ``penalty_unit`` (day or hour) of lateness, up to 100 (0: late is only flagged);
    - at most ``max_attempts`` counted submissions per learner (NULL: no limit);
    - ``feedback_policy``: what a learner sees of a verdict (``server.courses.feedback_policy``):
      ``full``, ``score``, ``hidden-until-due`` or ``tokens:N``.
    """

    __tablename__ = "set_entries"
    __table_args__ = (
        CheckConstraint("penalty_unit IN ('day', 'hour')", name="penalty_unit"),
        CheckConstraint("penalty_percent >= 0 AND penalty_percent <= 100", name="penalty_percent"),
    )

    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"), primary_key=True)
    exercise: Mapped[str] = mapped_column(String(64), primary_key=True)
    release_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    due_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    close_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    penalty_percent: Mapped[float] = mapped_column(Float, default=0.0)
    penalty_unit: Mapped[str] = mapped_column(String(8), default="day")
    max_attempts: Mapped[int | None] = mapped_column()
    feedback_policy: Mapped[str] = mapped_column(String(32), default="full", server_default="full")
    #: The stored, verified exercise version this set grades with (``exercise_versions``; issue
    #: 32): NULL for a built-in exercise, graded by the code the grader ships.
    content_version: Mapped[str | None] = mapped_column(String(16))


class Extension(Base):
    """A later due date for one learner on one exercise of one course. It also moves the
    hard close for that learner when the close came earlier than the new due date."""

    __tablename__ = "extensions"

    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    exercise: Mapped[str] = mapped_column(String(64), primary_key=True)
    due_at: Mapped[datetime] = mapped_column(UTCDateTime())
    granted_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    #: Who granted it (a staff login, or ``cli:<os user>``) and why; None for extensions
    #: granted before migration 0027 recorded them.
    granted_by: Mapped[str | None] = mapped_column(String(128))
    reason: Mapped[str | None] = mapped_column(String(500))


class FeedbackToken(Base):
    """A learner's token spent on one submission of a ``tokens:N`` set: that submission's full
    report is theirs to read from then on. ``spent_at`` counts it against that day's N."""

    __tablename__ = "feedback_tokens"
    __table_args__ = (
        # Tokens spent today on one exercise of one course: counted at each spend.
        Index("ix_feedback_tokens_course_id_user_id_exercise_spent_at", "course_id", "user_id", "exercise", "spent_at"),
    )

    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), primary_key=True)
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    exercise: Mapped[str] = mapped_column(String(64))
    spent_at: Mapped[datetime] = mapped_column(UTCDateTime())
