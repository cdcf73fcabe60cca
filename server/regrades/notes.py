"""What a submission's reader is told about applied regrades: old and new verdict, the reason.

Only applied sets leave superseded verdicts, so a preview can never show up here.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import RegradeSet, SupersededVerdict
from server.submissions.schemas import RegradeNote


def regrade_notes(session: Session, submission_ids: Iterable[int]) -> dict[int, list[RegradeNote]]:
    """Applied regrades per submission id, oldest first (ids without one are absent)."""
    ids = sorted(set(submission_ids))
    found: dict[int, list[RegradeNote]] = {}
    if not ids:
        return found
    rows = session.execute(
        select(SupersededVerdict, RegradeSet.applied_at, RegradeSet.reason)
        .join(RegradeSet, RegradeSet.id == SupersededVerdict.set_id)
        .where(SupersededVerdict.submission_id.in_(ids))
        .order_by(SupersededVerdict.submission_id, SupersededVerdict.id)
    ).tuples()
    for old, applied_at, reason in rows:
        found.setdefault(old.submission_id, []).append(
            RegradeNote(
                regrade=old.set_id,
                applied_at=applied_at,
                reason=reason or "",
                old_verdict=old.verdict,  # type: ignore[arg-type]  # the column holds the enum's value; pydantic validates it
                old_score=old.score,
                old_counted_score=old.counted_score,
                new_verdict=old.new_verdict,  # type: ignore[arg-type]  # the column holds the enum's value; pydantic validates it
                new_score=old.new_score,
                new_counted_score=old.new_counted_score,
                old_content_version=old.content_version,
                old_grader_version=old.grader_version,
            )
        )
    return found
