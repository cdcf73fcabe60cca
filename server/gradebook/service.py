"""The gradebook: one row per learner and exercise of the catalog, for an LMS.

Read from ``best_scores``: same rules as the leaderboard (best over graded runs, attempts
exclude internal errors); ``solved_at`` is the first submission time of a graded 100. Learners without a submission
for an exercise get a row with 0 and no attempts, so the LMS sees every cell.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.catalog.service import list_exercises
from server.leaderboard.service import _as_datetime, per_exercise
from server.models import Role, User

HEADER = ["learner", "display_name", "exercise", "best_score", "attempts", "solved_at"]


def gradebook_rows(session: Session) -> Iterator[list[str]]:
    """The CSV rows, header first, ordered by learner then course order."""
    rows = per_exercise(None)
    stats = {
        (user_id, exercise): (best, attempts, _as_datetime(solved_at))
        for user_id, exercise, best, attempts, solved_at in session.execute(
            select(rows.c.user_id, rows.c.exercise, rows.c.best, rows.c.attempts, rows.c.solved_at)
        ).tuples()
    }
    slugs = [e.slug for e in list_exercises()]
    yield HEADER
    learners = session.execute(
        select(User.id, User.name, User.display_name).where(User.role == Role.LEARNER.value).order_by(User.name)
    ).tuples()
    for user_id, name, display_name in learners:
        for slug in slugs:
            best, attempts, at = stats.get((user_id, slug), (0.0, 0, None))
            yield [name, display_name, slug, f"{float(best):g}", str(attempts), at.isoformat() if at else ""]


def gradebook_csv(session: Session) -> str:
    """The whole gradebook as CSV text."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for row in gradebook_rows(session):
        writer.writerow([_safe(cell) for cell in row])
    return buffer.getvalue()


def _safe(cell: str) -> str:
    # A display name like "=HYPERLINK(...)" must not run as a formula in a spreadsheet.
    return "'" + cell if cell[:1] in ("=", "+", "-", "@") and not _is_number(cell) else cell


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True
