"""The gradebooks of one course, for people and for the LMS: the long file (a row per learner
and exercise of its set), the Canvas file and the Moodle file (a row per learner, a column
per exercise), in the layouts their importers read. docs/instructors.md ("Gradebooks and
exports") is the reference; the rule every export follows:

- **One number, one name.** Every score cell is the **score that counts**
  (``server.courses.counted.course_scores``, as on the pages, in the API and the LMS sync):
  late penalty, extension and override applied, out of 100, at most two decimals. The long
  file calls it ``counted_score``, as the API does; the raw score is ``raw_best_score``. The
  board score (what the boards rank) is never exported.
- **No score is never 0.** A learner who never attempted an exercise has no score: the cell
  is empty (the API's ``null``), and the long file says ``attempts`` 0. A learner with
  attempts but no graded run has 0. An excused learner has no score either: the long file
  leaves the cell empty and says ``correction`` ``excused``; Canvas's file writes ``EX``
  (Canvas's own mark for excused). Moodle's import has no excused mark and reads ``-`` as
  "no grade" in every column (an empty cell in a new grade item's column is not), so the Moodle
  file writes ``-`` for both.
- **Who is who.** Rows are the course's learners, by login. The Canvas file follows Canvas's
  gradebook export (``Student, ID, SIS User ID, SIS Login ID, Section``, a ``Points Possible``
  row, then one column per exercise title); Canvas matches a row on ``ID``, then ``SIS User
  ID``, then ``SIS Login ID``, then the name; our login goes in ``SIS Login ID`` (default) or
  ``SIS User ID`` (``login_column``: when the logins are student numbers), the display name
  in ``Student``. The Moodle file has ``Username`` (the login) and ``Full name``; Moodle's
  "Identify user by" maps that column to the username, email address or ID number, whichever
  the logins are. Moodle stops a whole import at a row it cannot place, so the file has no
  row but learners and no empty identity cell.

Files are RFC 4180 CSV: comma, double quotes where needed, UTF-8 without a byte-order mark,
CRLF line ends (the long file: LF); a cell a spreadsheet would run as a formula is prefixed
with ``'``. The default course's set is the whole catalogue.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.catalogue.service import catalogue_index
from server.courses.counted import FULL_SCORE, ExerciseScore, course_scores, describe
from server.courses.sets import course_exercises
from server.gradebook.formats import LOGIN_COLUMNS, LoginColumn, check_export
from server.leaderboard.service import learner_ids
from server.models import DEFAULT_COURSE_ID, Course, User, aware_utc

HEADER = [
    "learner",
    "display_name",
    "exercise",
    "counted_score",
    "attempts",
    "solved_at",
    "raw_best_score",
    "counted_submission_id",
    "counted_late",
    "penalty_percent",
    "extended_to",
    "correction",
    "described",
    # ``described``'s old name, the same text, for one release (docs/api.md); the last column,
    # so a reader that finds columns by position reads every other one where it was
    "shown",
]
CANVAS_IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
#: Canvas's export writes its points row so, indented; its importer finds it by the words.
CANVAS_POINTS_ROW = "    Points Possible"
MOODLE_IDENTITY = ["Username", "Full name"]


@dataclass(frozen=True)
class NoScore:
    """How one file spells a cell without a score (the rule above)."""

    not_attempted: str
    excused: str


LONG = NoScore(not_attempted="", excused="")
CANVAS = NoScore(not_attempted="", excused="EX")
MOODLE = NoScore(not_attempted="-", excused="-")


def score_cell(score: ExerciseScore | None, spelling: NoScore) -> str:
    """One score cell of any export: the score that counts (at most two decimals), or the
    file's spelling of no score."""
    if score is not None and score.excused:
        return spelling.excused
    if score is None or score.counted is None:
        return spelling.not_attempted
    return f"{round(score.counted, 2):g}"


def gradebook_rows(session: Session, course: Course | None = None) -> Iterator[list[str]]:
    """The long CSV's rows of one course (None: the default course), header first, by learner
    then catalogue order; every score from ``server.courses.counted``."""
    course = _course(session, course)
    scores = course_scores(session, course)
    slugs = course_exercises(session, course)
    yield HEADER
    for user_id, name, display_name in _learners(session, course):
        for slug in slugs:
            score = scores.get((user_id, slug))
            if score is None:  # never attempted, never corrected: no score, and nothing else
                yield [name, display_name, slug, "", "0", "", "", "", "", "", "", "", describe(None), describe(None)]
                continue
            run, at = score.counting, aware_utc(score.solved_at)
            extended = aware_utc(score.extended_to)
            described = describe(score, course.time_zone)
            yield [
                name,
                display_name,
                slug,
                score_cell(score, LONG),
                str(score.attempts),
                at.isoformat() if at else "",
                "" if score.raw_best is None else f"{round(score.raw_best, 2):g}",
                str(run.submission_id) if run else "",
                ("yes" if score.late else "no") if run else "",
                f"{score.penalty_percent:g}" if run or score.override else "",
                extended.isoformat() if extended else "",
                _correction(score),
                described,
                described,
            ]


def _course(session: Session, course: Course | None) -> Course:
    found = course or session.get(Course, DEFAULT_COURSE_ID)
    assert found is not None
    return found


def _correction(score: ExerciseScore) -> str:
    return "excused" if score.excused else "override" if score.override is not None else ""


def _learners(session: Session, course: Course) -> list[tuple[int, str, str]]:
    return list(
        session.execute(
            select(User.id, User.name, User.display_name).where(User.id.in_(learner_ids(course.id))).order_by(User.name)
        ).tuples()
    )


def _titled_exercises(session: Session, course: Course) -> list[tuple[str, str]]:
    """(slug, title) of the course's set, in catalogue order: the LMS files' columns."""
    slugs = set(course_exercises(session, course))
    return [(e.slug, e.title) for e in catalogue_index() if e.slug in slugs]


def canvas_gradebook_rows(
    session: Session, course: Course | None = None, login_column: LoginColumn = "sis-login-id"
) -> Iterator[list[str]]:
    """The Canvas file's rows (None: the default course): header, ``Points Possible`` (100 per
    exercise), then one row per learner by login, our login in ``login_column``'s column."""
    course = _course(session, course)
    scores = course_scores(session, course)
    exercises = _titled_exercises(session, course)
    yield CANVAS_IDENTITY + [title for _, title in exercises]
    yield [CANVAS_POINTS_ROW, "", "", "", ""] + [f"{FULL_SCORE:g}"] * len(exercises)
    at = CANVAS_IDENTITY.index(LOGIN_COLUMNS[login_column])
    for user_id, name, display_name in _learners(session, course):
        identity = [display_name, "", "", "", ""]
        identity[at] = name
        yield identity + [score_cell(scores.get((user_id, slug)), CANVAS) for slug, _ in exercises]


def moodle_gradebook_rows(session: Session, course: Course | None = None) -> Iterator[list[str]]:
    """The Moodle file's rows (None: the default course): header, then one row per learner by
    login (``Username``), ``-`` where there is no score."""
    course = _course(session, course)
    scores = course_scores(session, course)
    exercises = _titled_exercises(session, course)
    yield MOODLE_IDENTITY + [title for _, title in exercises]
    for user_id, name, display_name in _learners(session, course):
        yield [name, display_name] + [score_cell(scores.get((user_id, slug)), MOODLE) for slug, _ in exercises]


def canvas_gradebook_csv(
    session: Session, course: Course | None = None, login_column: LoginColumn = "sis-login-id"
) -> str:
    """A course's Canvas gradebook as RFC 4180 CSV text (CRLF line ends; None: the default course)."""
    return _csv(canvas_gradebook_rows(session, course, login_column), "\r\n")


def moodle_gradebook_csv(session: Session, course: Course | None = None) -> str:
    """A course's Moodle gradebook as RFC 4180 CSV text (CRLF line ends; None: the default course)."""
    return _csv(moodle_gradebook_rows(session, course), "\r\n")


def export_csv(session: Session, course: Course, format: str, login_column: str = "sis-login-id") -> str:
    """One of the course's files by name (``FORMATS``); a name that is none: ``InvalidExport``."""
    check_export(format, login_column)
    if format == "canvas":
        return canvas_gradebook_csv(session, course, login_column)  # type: ignore[arg-type]
    return moodle_gradebook_csv(session, course) if format == "moodle" else gradebook_csv(session, course)


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
    # A display name like "=HYPERLINK(...)" must not run as a formula in a spreadsheet; "-"
    # alone is Moodle's "no grade", not a formula.
    return "'" + cell if cell[:1] in ("=", "+", "-", "@") and cell != "-" and not _is_number(cell) else cell


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True
