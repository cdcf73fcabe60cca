"""Extensions and corrections in bulk, from a CSV: read it, run it as a dry run, apply it.

The CSV (pasted or uploaded on the dashboard's extensions page, or ``ppo-grader extensions
import COURSE FILE.csv``) has a header row and one action per row::

    learner,exercise,due,score,reason[,action]

``learner`` and ``exercise`` are required; ``due`` is the new due date (ISO, the course's zone
unless an offset is given) of an ``extend``; ``score`` the hand score (0-100) of an
``override``; ``reason`` what the learner reads. The action is the row's ``action`` column
(``extend``, ``undo-extend``, ``override``, ``excuse``, ``undo-override``, ``undo-excuse``), else
the one kind chosen for the whole upload, else what the columns say (a ``due`` column:
``extend``; a ``score`` column: ``override``).

The input is hostile: at most :data:`MAX_CSV_BYTES` and :data:`MAX_ROWS` rows, strict UTF-8
(a byte-order mark is allowed), read by the ``csv`` module; a file that cannot be read as a
whole is refused with ``InvalidBulkFile`` and a sentence that says why.

:func:`run` is the dry run and the apply alike: every row goes through the same domain service
as a single correction (``server.courses.corrections``, ``server.courses.sets``), each in its
own savepoint so that a refused row is undone and named, and the counted score before and after
is read with ``server.courses.counted``. A dry run then rolls everything back; an apply keeps
it only when no row was refused and the rows' :attr:`BulkPlan.digest` is the one the preview
showed (a CSV, or a score, that changed since is refused, never applied blind). All or nothing:
the services' own audit events for each row, and one ``bulk.import`` event, commit together.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.courses import audit, corrections
from server.courses.counted import ExerciseScore, course_scores
from server.courses.service import LEARNER, course_role, course_time, read_time
from server.courses.sets import course_exercises, grant_extension, remove_extension, rules_for
from server.errors import GraderError, InvalidBulkFile
from server.models import AuditAction, CorrectionKind, Course, User

#: The largest CSV read (bytes), and the most rows.
MAX_CSV_BYTES = 256 * 1024
MAX_ROWS = 2_000
#: Longest text kept from one cell (the services refuse longer reasons with their own sentence).
MAX_CELL_CHARS = 600

KINDS = ("extend", "undo-extend", "override", "excuse", "undo-override", "undo-excuse")
COLUMNS = ("learner", "exercise", "action", "due", "score", "reason")


@dataclass(frozen=True)
class BulkRow:
    """One data row as read (``line``: its line in the file, the header being line 1)."""

    line: int
    learner: str
    exercise: str
    action: str
    due: str
    score: str
    reason: str


@dataclass(frozen=True)
class RowResult:
    """What one row does (or was refused for): the change in words, the counted score before
    and after, as the gradebook writes them."""

    row: BulkRow
    change: str
    before: str
    after: str
    refused: str | None = None


@dataclass
class BulkPlan:
    """Every row's result, the digest of them all, and whether they were applied."""

    course: str
    results: list[RowResult] = field(default_factory=list)
    applied: bool = False

    @property
    def refused(self) -> list[RowResult]:
        return [r for r in self.results if r.refused is not None]

    @property
    def changed(self) -> int:
        """Counted scores that change: the (learner, exercise) pairs whose score after their last
        row differs from the one before their first (two rows on one pair change one score)."""
        first: dict[tuple[str, str], str] = {}
        last: dict[tuple[str, str], str] = {}
        for r in self.results:
            if r.refused is None:
                first.setdefault((r.row.learner, r.row.exercise), r.before)
                last[(r.row.learner, r.row.exercise)] = r.after
        return sum(1 for key, after in last.items() if first[key] != after)

    @property
    def digest(self) -> str:
        """SHA-256 of the course and every row's result: what a confirmation carries."""
        rows = [
            [
                r.row.line,
                r.row.learner,
                r.row.exercise,
                r.row.action,
                r.row.due,
                r.row.score,
                r.row.reason,
                r.change,
                r.before,
                r.after,
                r.refused,
            ]
            for r in self.results
        ]
        return hashlib.sha256(json.dumps([self.course, rows], ensure_ascii=True).encode()).hexdigest()


def read_csv(data: bytes, kind: str | None = None) -> list[BulkRow]:
    """The rows of a bulk CSV; ``kind``: the action of rows without an ``action`` cell.
    ``InvalidBulkFile`` for a file that cannot be read as a whole."""
    if len(data) > MAX_CSV_BYTES:
        raise InvalidBulkFile(
            f"The CSV is over {MAX_CSV_BYTES // 1024} KiB; split it into smaller files.", status_code=413
        )
    if kind is not None and kind not in KINDS:
        raise InvalidBulkFile(f"The action is one of {', '.join(KINDS)}, not {kind[:32]!r}.")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidBulkFile(
            f"The CSV is not UTF-8 text (byte {exc.start + 1} is not); save it as 'CSV UTF-8' and try again."
        ) from None
    if "\x00" in text:
        raise InvalidBulkFile("The CSV holds NUL characters: it is not a text file.")
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            raise InvalidBulkFile("The CSV is empty: it needs a header row (learner,exercise,due,score,reason).")
        names = [h.strip().lower() for h in header]
        unknown = [n for n in names if n not in COLUMNS]
        if unknown:
            raise InvalidBulkFile(
                f"Unknown column {unknown[0][:40]!r} in the header; the columns are {', '.join(COLUMNS)}."
            )
        if "learner" not in names or "exercise" not in names:
            raise InvalidBulkFile("The header must name the columns learner and exercise (and due, score, reason).")
        if len(set(names)) != len(names):
            raise InvalidBulkFile("A column is named twice in the header.")
        default = kind or ("extend" if "due" in names else "override" if "score" in names else "")
        rows: list[BulkRow] = []
        for cells in reader:
            if not any(c.strip() for c in cells):
                continue
            if len(rows) == MAX_ROWS:
                raise InvalidBulkFile(f"The CSV has more than {MAX_ROWS} rows; split it into smaller files.")
            got = {n: cells[i].strip()[:MAX_CELL_CHARS] if i < len(cells) else "" for i, n in enumerate(names)}
            rows.append(
                BulkRow(
                    reader.line_num,
                    got["learner"],  # never cut: a cut login could name another account
                    got["exercise"],
                    (got.get("action") or default).lower()[:32],
                    got.get("due", ""),
                    got.get("score", "")[:32],
                    got.get("reason", ""),
                )
            )
    except csv.Error as exc:
        raise InvalidBulkFile(f"The CSV cannot be read at line {reader.line_num}: {str(exc)[:120]}.") from None
    if not rows:
        raise InvalidBulkFile("The CSV has a header but no row.")
    return rows


def _shown(score: ExerciseScore | None) -> str:
    """The counted score as the overview shows it."""
    if score is None:
        return "—"
    if score.excused:
        return "excused"
    return "—" if score.counted is None else f"{round(score.counted, 2):g}"


def _counted(session: Session, course: Course, user: User, exercise: str) -> str:
    return _shown(course_scores(session, course, [user.id], [exercise]).get((user.id, exercise)))


class _Refused(Exception):
    """A row's own refusal (before any service is called), in a TA's words."""


def _learner(session: Session, course: Course, name: str) -> User:
    if not name:
        raise _Refused("No learner: the learner cell is empty.")
    user = session.scalar(select(User).where(User.name == name))
    if user is None:
        raise _Refused(f"Unknown learner {name!r}: no account has that login.")
    if course_role(session, user, course) != LEARNER:
        raise _Refused(f"{name!r} is not a learner of {course.slug!r}.")
    return user


def _due(course: Course, text: str) -> datetime:
    try:
        moment = read_time(datetime.fromisoformat(text), course)
    except ValueError:
        raise _Refused(f"Bad date {text[:40]!r}: write it as 2026-12-14 09:00 (the course's zone).") from None
    assert moment is not None
    return moment


def _score(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not 0 <= value <= 100:
        raise _Refused(f"Score out of range: {text[:20]!r} is not a score from 0 to 100.")
    return value


def _act(session: Session, course: Course, user: User, row: BulkRow, actor: str) -> str:
    """Make the row's change through its domain service; what changed, in words."""
    if row.action == "extend":
        if not row.due:
            raise _Refused("An extension needs a new due date (the due column).")
        before = rules_for(session, course, user.id, row.exercise)
        due = _due(course, row.due)
        grant_extension(session, course, user.name, row.exercise, due, actor=actor, reason=row.reason)
        was = course_time(before.due_at, course) if before is not None and before.due_at is not None else "none"
        return f"due {was} → {course_time(due, course)}"
    if row.action == "undo-extend":
        remove_extension(session, course, user.name, row.exercise, actor=actor)
        return "extension taken back"
    if row.action == "override":
        if not row.score:
            raise _Refused("An override needs a score (the score column).")
        score = _score(row.score)
        corrections.override(session, course, user.name, row.exercise, score, row.reason, actor)
        return f"override {score:g}"
    if row.action == "excuse":
        corrections.excuse(session, course, user.name, row.exercise, row.reason, actor)
        return "excused (out of the average)"
    if row.action in ("undo-override", "undo-excuse"):
        kind = CorrectionKind.OVERRIDE if row.action == "undo-override" else CorrectionKind.EXCUSE
        if corrections.take_back(session, course, user.name, row.exercise, kind, actor).revoked == 0:
            raise _Refused(f"{user.name!r} has no {kind.value} on {row.exercise!r} to take back.")
        return f"{kind.value} taken back"
    if not row.action:
        raise _Refused("No action: add an action column, or choose one action for the whole file.")
    raise _Refused(f"Unknown action {row.action!r}: one of {', '.join(KINDS)}.")


def _one(
    session: Session, course: Course, row: BulkRow, actor: str, exercises: set[str], known: dict[tuple[int, str], str]
) -> RowResult:
    """One row in its own savepoint: kept when it worked, undone (and named) when refused.
    ``known``: each (learner, exercise)'s counted score as the rows so far left it (a row
    changes its own pair's score only), so a pair is read once before and once after each row."""
    try:
        user = _learner(session, course, row.learner)
        if row.exercise not in exercises:
            raise _Refused(f"{row.exercise!r} is not an exercise of {course.slug!r}.")
    except _Refused as exc:
        return RowResult(row, "", "", "", str(exc))
    key = (user.id, row.exercise)
    before = known[key] if key in known else _counted(session, course, user, row.exercise)
    savepoint = session.begin_nested()
    try:
        change = _act(session, course, user, row, actor)
        session.flush()
    except (_Refused, GraderError) as exc:
        savepoint.rollback()
        return RowResult(row, "", before, before, str(exc) if isinstance(exc, _Refused) else exc.detail)
    savepoint.commit()
    known[key] = _counted(session, course, user, row.exercise)
    return RowResult(row, change, before, known[key])


def run(
    session: Session,
    course: Course,
    rows: list[BulkRow],
    actor: str,
    *,
    apply: bool = False,
    expected_digest: str | None = None,
) -> BulkPlan:
    """The dry run (``apply=False``: nothing is kept) or the apply of ``rows``.

    An apply keeps the changes only when no row is refused and, with ``expected_digest``, the
    rows' digest is that one (the preview the person confirmed); otherwise it is rolled back
    too and the plan says ``applied=False``. The caller commits."""
    plan = BulkPlan(course.slug)
    outer = session.begin_nested()
    try:
        exercises = set(course_exercises(session, course))
        known: dict[tuple[int, str], str] = {}
        plan.results = [_one(session, course, row, actor, exercises, known) for row in rows]
        keep = apply and not plan.refused and (expected_digest is None or expected_digest == plan.digest)
        if keep:
            kinds = sorted({r.row.action for r in plan.results})
            audit.record(
                session,
                course,
                actor,
                AuditAction.BULK_IMPORT,
                f"{len(plan.results)} rows",
                f"{', '.join(kinds)}; {plan.changed} counted scores changed; digest {plan.digest[:12]}",
            )
            session.flush()
            outer.commit()
            plan.applied = True
    finally:
        if outer.is_active:
            outer.rollback()
    return plan
