"""The audit log: one row per staff action (who, in which course, what, on what, when).

Rows are only ever added (``server.courses.audit.record``, called by the domain services, so
the CLI, the API and the pages all write them). ``actor_id`` is the staff account when the
action was made by one (a page, an API token, a terminal's ``--by`` or ``PPO_GRADER_TOKEN``);
``actor`` is the login as written then (``cli:<os user>`` for a command run at the server
host, ``lti-deep-link`` for a link an LMS made), so a deleted account leaves its name behind.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import CheckConstraint, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base, UTCDateTime, utcnow

#: Longest ``detail`` kept (a summary of the action; longer text is cut with an ellipsis).
MAX_DETAIL_CHARS = 300
#: Longest ``target`` kept (a learner and an exercise, a regrade set's id, a login).
MAX_TARGET_CHARS = 160


class AuditAction(StrEnum):
    """The closed list of staff actions the log records."""

    EXTENSION_GRANT = "extension.grant"
    EXTENSION_REMOVE = "extension.remove"
    SCORE_OVERRIDE = "score.override"
    SCORE_EXCUSE = "score.excuse"
    SCORE_UNDO_OVERRIDE = "score.undo-override"
    SCORE_UNDO_EXCUSE = "score.undo-excuse"
    SET_PUBLISH = "set.publish"
    SET_EDIT = "set.edit"
    SET_UNPUBLISH = "set.unpublish"
    SCORES_RELEASE = "scores.release"
    SCORES_HOLD = "scores.hold"
    REGRADE_APPLY = "regrade.apply"
    REGRADE_CANCEL = "regrade.cancel"
    STAFF_ADD = "staff.add"
    STAFF_REMOVE = "staff.remove"
    BULK_IMPORT = "bulk.import"
    REVIEW_COMMENT = "review.comment"
    REVIEW_ANSWER = "review.answer"


_ACTIONS = ", ".join(f"'{a.value}'" for a in AuditAction)


class AuditEvent(Base):
    """One staff action. ``course_id`` is None only for an action on no one course (a regrade
    of an exercise across every course that grades it)."""

    __tablename__ = "audit_events"
    __table_args__ = (
        CheckConstraint(f"action IN ({_ACTIONS})", name="action"),
        # A course's latest events first (the course page pages through them).
        Index("ix_audit_events_course_id_id", "course_id", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    course_id: Mapped[int | None] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"))
    actor_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    actor: Mapped[str] = mapped_column(String(128))
    action: Mapped[str] = mapped_column(String(32))
    target: Mapped[str] = mapped_column(String(MAX_TARGET_CHARS))
    detail: Mapped[str] = mapped_column(String(MAX_DETAIL_CHARS), default="")
    at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
