"""Hand corrections of the score that counts: overrides, excuses, and taking either back.

Each is one row of ``score_corrections`` (who, when, why), and one event of the audit log
(``server.courses.audit``); taking one back marks it revoked
and never deletes it, and a new override revokes the one it replaces. What they do to the
score is decided in one place only, ``server.courses.counted``. Callers commit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.courses import audit
from server.courses.service import LEARNER, course_role
from server.courses.sets import rules_for
from server.errors import InvalidCourse, UserNotFound
from server.models import AuditAction, CorrectionKind, Course, Extension, ScoreCorrection, User, utcnow
from server.text_guard import is_blank, is_storable_text
from server.vocabulary import MAX_REASON_CHARS


@dataclass(frozen=True)
class Undone:
    """What a take-back found: how many corrections it revoked."""

    revoked: int


def course_learner(session: Session, course: Course, name: str) -> User:
    """The learner called ``name`` in ``course``; 404 ``UserNotFound`` otherwise."""
    user = session.scalar(select(User).where(User.name == name[:64]))
    if user is None or course_role(session, user, course) != LEARNER:
        raise UserNotFound(f"No learner {name!r} in {course.slug!r}.")
    return user


def _check(session: Session, course: Course, user: User, exercise: str, reason: str) -> str:
    if rules_for(session, course, user.id, exercise) is None:
        raise InvalidCourse(f"{exercise!r} is not part of the course {course.slug!r}.")
    if not is_storable_text(reason):  # a NUL or a lone surrogate: PostgreSQL refuses the row (a 500)
        raise InvalidCourse("The reason holds a NUL byte or a lone surrogate, which cannot be stored.")
    reason = " ".join(reason.split())
    if is_blank(reason):
        raise InvalidCourse("Say why (--reason): the learner reads it beside the score.")
    if len(reason) > MAX_REASON_CHARS:
        raise InvalidCourse(f"A reason is at most {MAX_REASON_CHARS} characters.")
    return reason


def override(
    session: Session, course: Course, learner: str, exercise: str, score: float, reason: str, made_by: str
) -> ScoreCorrection:
    """Set a learner's score that counts on one exercise by hand (0-100), replacing any override."""
    if not math.isfinite(score) or not 0 <= score <= 100:
        raise InvalidCourse(f"An override is a score from 0 to 100, not {score:g}.")
    user = course_learner(session, course, learner)
    reason = _check(session, course, user, exercise, reason)
    _revoke(session, course, user, exercise, CorrectionKind.OVERRIDE, made_by)
    audit.record(
        session, course, made_by, AuditAction.SCORE_OVERRIDE, f"{user.name}/{exercise}", f"{score:g}: {reason}"
    )
    return _add(session, course, user, exercise, CorrectionKind.OVERRIDE, float(score), reason, made_by)


def excuse(session: Session, course: Course, learner: str, exercise: str, reason: str, made_by: str) -> ScoreCorrection:
    """Take one exercise out of a learner's average (an existing excuse is replaced)."""
    user = course_learner(session, course, learner)
    reason = _check(session, course, user, exercise, reason)
    _revoke(session, course, user, exercise, CorrectionKind.EXCUSE, made_by)
    audit.record(session, course, made_by, AuditAction.SCORE_EXCUSE, f"{user.name}/{exercise}", reason)
    return _add(session, course, user, exercise, CorrectionKind.EXCUSE, None, reason, made_by)


def take_back(
    session: Session, course: Course, learner: str, exercise: str, kind: CorrectionKind, made_by: str
) -> Undone:
    """Revoke the learner's override (or excuse) on one exercise; the graded score counts again."""
    user = course_learner(session, course, learner)
    revoked = _revoke(session, course, user, exercise, kind, made_by)
    action = AuditAction.SCORE_UNDO_OVERRIDE if kind is CorrectionKind.OVERRIDE else AuditAction.SCORE_UNDO_EXCUSE
    if revoked:
        audit.record(session, course, made_by, action, f"{user.name}/{exercise}", f"{revoked} taken back")
    return Undone(revoked)


def history(session: Session, course: Course, user_id: int | None = None) -> list[ScoreCorrection]:
    """Every correction of a course (or of one learner in it), revoked ones included, oldest first."""
    query = select(ScoreCorrection).where(ScoreCorrection.course_id == course.id)
    if user_id is not None:
        query = query.where(ScoreCorrection.user_id == user_id)
    return list(session.scalars(query.order_by(ScoreCorrection.id)))


def _revoke(session: Session, course: Course, user: User, exercise: str, kind: CorrectionKind, by: str) -> int:
    rows = session.scalars(
        select(ScoreCorrection).where(
            ScoreCorrection.course_id == course.id,
            ScoreCorrection.user_id == user.id,
            ScoreCorrection.exercise == exercise,
            ScoreCorrection.kind == kind.value,
            ScoreCorrection.revoked_at.is_(None),
        )
    ).all()
    now = utcnow()
    for row in rows:
        row.revoked_at, row.revoked_by = now, by[:128]
    session.flush()
    return len(rows)


def _add(
    session: Session,
    course: Course,
    user: User,
    exercise: str,
    kind: CorrectionKind,
    score: float | None,
    reason: str,
    by: str,
) -> ScoreCorrection:
    row = ScoreCorrection(
        course_id=course.id,
        user_id=user.id,
        exercise=exercise,
        kind=kind.value,
        score=score,
        reason=reason,
        made_by=by[:128],
        made_at=utcnow(),
    )
    session.add(row)
    session.flush()
    return row


@dataclass(frozen=True)
class LedgerLine:
    """One extension, override or excuse of a course, as the staff's overview lists it."""

    kind: str
    learner: str
    exercise: str
    #: The new due date of an extension; the hand score of an override.
    due_at: datetime | None
    score: float | None
    reason: str
    made_by: str
    made_at: datetime
    revoked_by: str | None = None
    revoked_at: datetime | None = None


def ledger(session: Session, course: Course) -> list[LedgerLine]:
    """Every extension in force and every correction (taken-back ones included) of ``course``,
    newest first: who, when and why (an extension granted before migration 0027 says neither)."""
    names: dict[int, str] = {}
    ids = set(session.scalars(select(Extension.user_id).where(Extension.course_id == course.id)))
    ids |= set(session.scalars(select(ScoreCorrection.user_id).where(ScoreCorrection.course_id == course.id)))
    if ids:
        names = dict(session.execute(select(User.id, User.name).where(User.id.in_(ids))).tuples().all())
    lines = [
        LedgerLine(
            "extension",
            names.get(x.user_id, "?"),
            x.exercise,
            x.due_at,
            None,
            x.reason or "",
            x.granted_by or "not recorded",
            x.granted_at,
        )
        for x in session.scalars(select(Extension).where(Extension.course_id == course.id))
    ]
    lines += [
        LedgerLine(
            c.kind,
            names.get(c.user_id, "?"),
            c.exercise,
            None,
            c.score,
            c.reason,
            c.made_by,
            c.made_at,
            c.revoked_by,
            c.revoked_at,
        )
        for c in history(session, course)
    ]
    return sorted(lines, key=lambda line: line.made_at, reverse=True)
