"""Human review of a submission: staff comments on its lines, and a learner's review requests.

- ``review_comments``: one comment of the course's staff (an instructor or a TA) on one line
  of a submission's stored source (``line`` counts from 1). The learner reads it on the
  submission's page and in ``ppo-submit show``, as the set's feedback policy allows
  (``server.review.service``). Rows are never changed.
- ``review_requests``: a learner asks the staff to look at one of their submissions again,
  with a message. At most one request per submission is ``open`` at a time (a partial unique
  index, so two requests sent at once cannot both open); staff answer it and resolve it, with
  or without a correction of the score that counts (``correction_id``: the override the
  answer made, through ``server.courses.corrections``, never a second override path).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import CheckConstraint, ForeignKey, Index, Integer, String, text
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base, UTCDateTime, utcnow

#: Longest comment kept (learner-facing text, so capped; a longer one is refused, never cut).
MAX_COMMENT_CHARS = 2000
#: Longest request message a learner may send.
MAX_REQUEST_CHARS = 1000
#: Longest answer the staff may write.
MAX_ANSWER_CHARS = 2000


class RequestState(StrEnum):
    """Where a review request stands."""

    OPEN = "open"
    RESOLVED = "resolved"


class ReviewComment(Base):
    """One staff comment on one line of one submission."""

    __tablename__ = "review_comments"
    __table_args__ = (
        CheckConstraint("line >= 1", name="line"),
        # A submission's comments, in order (its page and `ppo-submit show` read them all).
        Index("ix_review_comments_submission_id_id", "submission_id", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"))
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"))
    line: Mapped[int] = mapped_column(Integer)
    body: Mapped[str] = mapped_column(String(MAX_COMMENT_CHARS))
    #: The staff login as written then (the account may be deleted later).
    author: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ReviewRequest(Base):
    """A learner's request for a human review of one of their submissions, and its answer."""

    __tablename__ = "review_requests"
    __table_args__ = (
        CheckConstraint("state IN ('open', 'resolved')", name="state"),
        # One open request per submission, held by the database.
        Index(
            "ix_review_requests_open_submission",
            "submission_id",
            unique=True,
            sqlite_where=text("state = 'open'"),
            postgresql_where=text("state = 'open'"),
        ),
        # A course's requests by state, oldest first (the staff's page).
        Index("ix_review_requests_course_id_state_id", "course_id", "state", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"))
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    message: Mapped[str] = mapped_column(String(MAX_REQUEST_CHARS))
    state: Mapped[str] = mapped_column(String(16), default=RequestState.OPEN.value)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    answer: Mapped[str | None] = mapped_column(String(MAX_ANSWER_CHARS))
    answered_by: Mapped[str | None] = mapped_column(String(128))
    answered_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    #: The override the answer made (None: resolved without a correction).
    correction_id: Mapped[int | None] = mapped_column(ForeignKey("score_corrections.id", ondelete="SET NULL"))
