"""Corrections an instructor makes by hand to the score that counts of one learner on one
exercise of one course: an override (a score set by hand) or an excuse (the exercise taken
out of the learner's average).

Rows are never deleted: reversing a correction, or replacing an override by a new one, sets
``revoked_at`` and ``revoked_by``, so who changed what, when and why stays on record. The
correction in force is the newest unrevoked row of its kind (``server.courses.counted``).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import CheckConstraint, Float, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base, UTCDateTime, utcnow
from server.vocabulary import MAX_REASON_CHARS


class CorrectionKind(StrEnum):
    """Closed list of hand corrections."""

    OVERRIDE = "override"
    EXCUSE = "excuse"


class ScoreCorrection(Base):
    """One hand correction, in force until ``revoked_at``."""

    __tablename__ = "score_corrections"
    __table_args__ = (
        CheckConstraint("kind IN ('override', 'excuse')", name="kind"),
        CheckConstraint("score IS NULL OR (score >= 0 AND score <= 100)", name="score"),
        # The corrections of one course (its boards and gradebooks read them all at once).
        Index("ix_score_corrections_course_id_user_id_exercise", "course_id", "user_id", "exercise"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    exercise: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(16))
    #: The hand score (overrides only), 0-100.
    score: Mapped[float | None] = mapped_column(Float)
    reason: Mapped[str] = mapped_column(String(MAX_REASON_CHARS))
    #: Who made it: the login of a staff account of the course (``server.courses.staff``); rows
    #: made before that rule may say ``cli:<os user>``.
    made_by: Mapped[str] = mapped_column(String(128))
    made_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    revoked_by: Mapped[str | None] = mapped_column(String(128))
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
