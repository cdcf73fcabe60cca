"""The gradebook of one course: one row per learner and exercise of its set, for an LMS.

Read from ``best_scores``: same rules as the leaderboard (best over graded runs, attempts
exclude internal errors). ``best_score`` is the best score that counts (after a late
penalty), ``raw_best_score`` the best raw score; ``counted_submission_id`` is the submission
that counted and ``counted_late`` whether it was late. ``solved_at`` is the first submission
time of a 100 that counts. Learners without a submission for an exercise get a row with 0
and no attempts, so the LMS sees every cell. The default course's set is the whole catalogue.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.catalog.service import list_exercises
from server.courses.sets import entries
from server.leaderboard.service import _as_datetime, learner_ids, per_exercise
from server.models import DEFAULT_COURSE_ID, Course, Submission, User

HEADER = [
    "learner", "display_name", "exercise", "best_score", "attempts", "solved_at",
    "raw_best_score", "counted_submission_id", "counted_late",
]


def course_exercises(session: Session, course: Course) -> list[str]:
    """The slugs a course grades, in catalogue order (the default course: the catalogue)."""
    if course.id == DEFAULT_COURSE_ID:
        return [e.slug for e in list_exercises()]
    return [e.exercise for e in entries(session, course)]


def gradebook_rows(session: Session, course: Course | None = None) -> Iterator[list[str]]:
    """The CSV rows of one course (None: the default course), header first, by learner then
    catalogue order."""
    course = course or session.get(Course, DEFAULT_COURSE_ID)
    assert course is not None
    rows = per_exercise(None, course.id)
    late = func.coalesce(Submission.late_seconds, 0) > 0
    stats = {
        (user_id, exercise): (best, raw, attempts, _as_datetime(solved_at), submission_id, bool(was_late))
        for user_id, exercise, best, raw, attempts, solved_at, submission_id, was_late in session.execute(
            select(
                rows.c.user_id, rows.c.exercise, rows.c.best, rows.c.raw_best, rows.c.attempts,
                rows.c.solved_at, rows.c.submission_id, late,
            ).outerjoin(Submission, Submission.id == rows.c.submission_id)
        ).tuples()
    }
    slugs = course_exercises(session, course)
    yield HEADER
    learners = session.execute(
        select(User.id, User.name, User.display_name).where(User.id.in_(learner_ids(course.id))).order_by(User.name)
    ).tuples()
    for user_id, name, display_name in learners:
        for slug in slugs:
            best, raw, attempts, at, counted_id, was_late = stats.get((user_id, slug), (0.0, 0.0, 0, None, None, False))
            yield [
                name, display_name, slug, f"{float(best):g}", str(attempts), at.isoformat() if at else "",
                f"{float(raw):g}", str(counted_id or ""), ("yes" if was_late else "no") if counted_id else "",
            ]


def gradebook_csv(session: Session, course: Course | None = None) -> str:
    """A course's whole gradebook as CSV text (None: the default course)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for row in gradebook_rows(session, course):
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
