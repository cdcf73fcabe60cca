"""One row per (course, user, exercise): the leaderboard's and gradebook's aggregate, kept up
to date in the transaction that stores each verdict (``server.grading.persistence``)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Float, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base, UTCDateTime


class BestScore(Base):
    """Same rules as ``server.leaderboard.service``, precomputed.

    - ``attempts``: finished submissions whose verdict is not ``internal_error``.
    - ``best_score``: max score over ``graded`` rows; NULL while there is none.
    - ``best_reached_at``: ``created_at`` of the first graded row with that score, and
      ``best_submission_id`` that row (lowest id on an exact tie).
    - ``counted_score``, ``counted_reached_at``, ``counted_submission_id``: the same over the
      score that counts (after the late policy's penalty).
    - ``board_score``, ``board_reached_at``, ``board_submission_id``: the same over the board
      score (``submissions.board_score``, or the score that counts where it is NULL): what the
      boards rank by.
    - ``solved_at``: ``created_at`` of the first graded row whose score that counts is full.
    Every user is kept; readers filter learners, so a role change needs no rewrite.
    """

    __tablename__ = "best_scores"

    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    exercise: Mapped[str] = mapped_column(String(64), primary_key=True)
    best_score: Mapped[float | None] = mapped_column(Float)
    attempts: Mapped[int] = mapped_column(default=0)
    best_reached_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    best_submission_id: Mapped[int | None] = mapped_column(ForeignKey("submissions.id", ondelete="SET NULL"))
    counted_score: Mapped[float | None] = mapped_column(Float)
    counted_reached_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    counted_submission_id: Mapped[int | None] = mapped_column(ForeignKey("submissions.id", ondelete="SET NULL"))
    board_score: Mapped[float | None] = mapped_column(Float)
    board_reached_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    board_submission_id: Mapped[int | None] = mapped_column(ForeignKey("submissions.id", ondelete="SET NULL"))
    solved_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
