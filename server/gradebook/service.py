"""The gradebooks of one course: the long one (a row per learner and exercise of its set) and
the wide one (a row per learner, a column per exercise) that Canvas and Moodle import as they are.

Every score is ``server.courses.counted.course_scores``'s, as on the boards and pages: the
score that counts (late penalty, extension, override; empty when excused). The long file
adds ``raw_best_score`` (before penalties), ``counted_submission_id`` (the submission that
counted), ``counted_late`` (whether it was late), ``penalty_percent`` (its late penalty),
``extended_to`` (the learner's extended due date, UTC), ``correction`` (``override`` or
``excused``) and ``shown`` (the score as every page writes it); ``solved_at`` is when the
score that counts first was 100, and learners without a submission for an exercise get a
row with 0 and no attempts. The default course's set is the whole catalogue.

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

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.catalog.service import list_exercises
from server.courses.counted import ExerciseScore, course_scores, describe
from server.courses.sets import course_exercises
from server.leaderboard.service import learner_ids
from server.models import DEFAULT_COURSE_ID, Course, User, aware_utc

HEADER = [
    "learner",
    "display_name",
    "exercise",
    "best_score",
    "attempts",
    "solved_at",
    "raw_best_score",
    "counted_submission_id",
    "counted_late",
    "penalty_percent",
    "extended_to",
    "correction",
    "shown",
]
WIDE_IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


def gradebook_rows(session: Session, course: Course | None = None) -> Iterator[list[str]]:
    """The CSV rows of one course (None: the default course), header first, by learner then
    catalogue order; every score from ``server.courses.counted``."""
    course = course or session.get(Course, DEFAULT_COURSE_ID)
    assert course is not None
    scores = course_scores(session, course)
    slugs = course_exercises(session, course)
    yield HEADER
    for user_id, name, display_name in _learners(session, course):
        for slug in slugs:
            score = scores.get((user_id, slug))
            if score is None:
                yield [name, display_name, slug, "0", "0", "", "0", "", "", "0", "", "", "-"]
                continue
            run, at = score.run, aware_utc(score.solved_at)
            extended = aware_utc(score.extended_to)
            yield [
                name,
                display_name,
                slug,
                "" if score.counted is None else f"{score.counted:g}",
                str(score.attempts),
                at.isoformat() if at else "",
                f"{score.raw_best or 0.0:g}",
                str(run.submission_id) if run else "",
                ("yes" if score.late else "no") if run else "",
                f"{score.penalty_percent:g}",
                extended.isoformat() if extended else "",
                _correction(score),
                describe(score, course.time_zone),
            ]


def _correction(score: ExerciseScore) -> str:
    return "excused" if score.excused else "override" if score.override is not None else ""


def _learners(session: Session, course: Course) -> list[tuple[int, str, str]]:
    return list(
        session.execute(
            select(User.id, User.name, User.display_name).where(User.id.in_(learner_ids(course.id))).order_by(User.name)
        ).tuples()
    )


def wide_gradebook_rows(session: Session, course: Course | None = None) -> Iterator[list[str]]:
    """The wide CSV's rows of one course (None: the default course), header first: one per
    learner (by login), one column per exercise of its set (catalogue order); an empty cell
    where the learner never attempted the exercise or is excused from it. Scores are the
    ones that count (``server.courses.counted``)."""
    course = course or session.get(Course, DEFAULT_COURSE_ID)
    assert course is not None
    scores = course_scores(session, course)
    slugs = set(course_exercises(session, course))
    exercises = [e for e in list_exercises() if e.slug in slugs]
    yield WIDE_IDENTITY + [e.title for e in exercises]
    for user_id, name, display_name in _learners(session, course):
        cells = [_score(scores.get((user_id, e.slug))) for e in exercises]
        yield [display_name, "", "", name, ""] + cells


def _score(score: ExerciseScore | None) -> str:
    if score is None or score.counted is None:
        return ""
    return f"{round(score.counted, 2):g}"


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
