"""The gradebooks of one course: the long one (a row per learner and exercise of its set) and
the wide one (a row per learner, a column per exercise) that Canvas and Moodle import as they are.

Read from ``best_scores``: same rules as the leaderboard (best over graded runs, attempts
exclude internal errors). Both use the best score that counts (after a late penalty). The
long file adds ``raw_best_score`` (before penalties), ``counted_submission_id`` (the
submission that counted) and ``counted_late`` (whether it was late); ``solved_at`` is the
first submission time of a 100 that counts, and learners without a submission for an
exercise get a row with 0 and no attempts. The default course's set is the whole catalogue.

The wide file follows the layout of Canvas's own gradebook export, which is what Canvas's
"Import" expects: ``Student, ID, SIS User ID, SIS Login ID, Section``, then one column per
assignment named by its title (a title Canvas does not know becomes a new assignment).
Students are matched on ``SIS Login ID``, which holds our login; ``ID`` and ``SIS User ID``
(Canvas's own ids, which we do not know) are left empty, as is ``Section``. Moodle's CSV
grade import reads the same file: map "SIS Login ID" to the username and each exercise
column to a grade item (or a new one). Scores are out of 100. A learner who never
attempted an exercise gets an empty cell, which both systems skip, so nothing is graded 0
by accident; a learner with attempts but no graded run gets 0. RFC 4180 CSV: comma, CRLF,
double quotes where needed, UTF-8 without a byte-order mark. No "Points Possible" row:
Canvas treats it as optional and Moodle would read it as a learner it cannot find.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence

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
WIDE_IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


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


def wide_gradebook_rows(session: Session, course: Course | None = None) -> Iterator[list[str]]:
    """The wide CSV's rows of one course (None: the default course), header first: one per
    learner (by login), one column per exercise of its set (catalogue order); an empty cell
    where the learner never attempted the exercise. Scores are the best that count."""
    course = course or session.get(Course, DEFAULT_COURSE_ID)
    assert course is not None
    rows = per_exercise(None, course.id)
    best = {
        (user_id, exercise): float(score)
        for user_id, exercise, score in session.execute(select(rows.c.user_id, rows.c.exercise, rows.c.best)).tuples()
    }
    slugs = set(course_exercises(session, course))
    exercises = [e for e in list_exercises() if e.slug in slugs]
    yield WIDE_IDENTITY + [e.title for e in exercises]
    learners = session.execute(
        select(User.id, User.name, User.display_name).where(User.id.in_(learner_ids(course.id))).order_by(User.name)
    ).tuples()
    for user_id, name, display_name in learners:
        cells = [_score((user_id, e.slug), best) for e in exercises]
        yield [display_name, "", "", name, ""] + cells


def _score(key: tuple[int, str], best: dict[tuple[int, str], float]) -> str:
    if key not in best:
        return ""
    return f"{round(best[key], 2):g}"


def wide_gradebook_csv(session: Session, course: Course | None = None) -> str:
    """A course's wide gradebook as RFC 4180 CSV text (CRLF line ends; None: the default course)."""
    return _csv(wide_gradebook_rows(session, course), "\r\n")


def gradebook_csv(session: Session, course: Course | None = None) -> str:
    """A course's whole gradebook as CSV text (None: the default course)."""
    return _csv(gradebook_rows(session, course), "\n")


def _csv(rows: Iterable[Sequence[str]], line_end: str) -> str:
    """Rows as CSV text, every cell made safe for spreadsheets."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator=line_end)
    for row in rows:
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
