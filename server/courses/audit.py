"""The audit log's one writer and its reader: every staff action is a row of ``audit_events``.

:func:`record` is called by the domain services that make the change (corrections, sets and
extensions, staff, regrades, bulk imports), never by a router, so the CLI, the API and the
pages all leave the same row. It adds the row to the caller's transaction: the event is kept
exactly when the change is. :func:`latest` is what the course page lists (its staff only).

The actor is the login the service was given (a staff account's name, or the CLI's
``cli:<os user>``); the account's id is looked up once here, so a row keeps both.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.models import AuditAction, AuditEvent, Course, User, utcnow
from server.models.audit import MAX_DETAIL_CHARS, MAX_TARGET_CHARS

#: Events per page of the course page's log.
PER_PAGE = 25


def _capped(text: str, limit: int) -> str:
    text = " ".join(str(text).split())  # one line: no control characters, no newlines
    return text if len(text) <= limit else text[: limit - 1] + "…"


def record(
    session: Session,
    course: Course | int | None,
    actor: str,
    action: AuditAction,
    target: str,
    detail: str = "",
) -> AuditEvent:
    """Add one event to the session's transaction (the caller commits, with the change)."""
    login = _capped(actor or "unknown", 128)
    found = session.info.setdefault("audit_actor_ids", {})  # an account's id, looked up once a session (a bulk import)
    actor_id = found.get(login) or session.scalar(select(User.id).where(User.name == login[:64]))
    if actor_id is not None:
        found[login] = actor_id
    event = AuditEvent(
        course_id=course.id if isinstance(course, Course) else course,
        actor_id=actor_id,
        actor=login,
        action=AuditAction(action).value,
        target=_capped(target, MAX_TARGET_CHARS),
        detail=_capped(detail, MAX_DETAIL_CHARS),
        at=utcnow(),
    )
    session.add(event)
    return event


@dataclass(frozen=True)
class AuditPage:
    """One page of a course's log, newest first, and how many events it has in all."""

    events: list[AuditEvent]
    total: int
    page: int
    pages: int


def latest(session: Session, course: Course, page: int = 1, per_page: int = PER_PAGE) -> AuditPage:
    """The course's events, newest first, ``page`` (from 1) of ``per_page``."""
    total = session.scalar(select(func.count()).select_from(AuditEvent).where(AuditEvent.course_id == course.id)) or 0
    pages = max(1, -(-total // per_page))
    page = min(max(1, page), pages)
    events = session.scalars(
        select(AuditEvent)
        .where(AuditEvent.course_id == course.id)
        .order_by(AuditEvent.id.desc())
        .limit(per_page)
        .offset((page - 1) * per_page)
    ).all()
    return AuditPage(list(events), total, page, pages)
