"""What applying a regrade set would change, compared with the verdicts learners see now.

A submission *changed* when its verdict, its raw score, a check's outcome or a named mistake
differs; nothing else (timings, output) counts. Scores move by the score that counts, whose
late penalty stays the one fixed at acceptance. Learners whose score or rank moves are read
from the leaderboard itself (server.leaderboard.service.board, over the one counted-score
function), before and after, so overrides and excuses count as they will.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from server.courses.best_scores import backfill_best_scores
from server.courses.counted import submission_board, submission_counted
from server.leaderboard.service import board
from server.models import (
    CheckResult,
    Course,
    Keep,
    RegradeResult,
    RegradeSet,
    Submission,
    SupersededVerdict,
    User,
    Verdict,
)

#: How many of the largest score changes the diff lists.
LARGEST = 10


@dataclass(frozen=True)
class Outcome:
    """One verdict as the diff compares it."""

    verdict: str | None
    score: float | None
    counted: float | None
    checks: dict[str, bool]
    mistakes: frozenset[str]
    #: The board score (the confirmed checks' share, less the penalty); boards rank by it.
    board: float | None = None

    def same_as(self, other: Outcome) -> bool:
        return (self.verdict, self.score, self.checks, self.mistakes) == (
            other.verdict,
            other.score,
            other.checks,
            other.mistakes,
        )


@dataclass(frozen=True)
class Change:
    """One submission of the set: its verdict now and the regraded one."""

    submission_id: int
    result_id: int
    course_id: int
    user_id: int
    user_name: str
    created_at: datetime
    old: Outcome
    new: Outcome

    @property
    def changed(self) -> bool:
        return not self.old.same_as(self.new)

    @property
    def failed(self) -> bool:
        """The regrade itself failed (the grader's fault): an apply leaves this verdict alone."""
        return self.new.verdict == Verdict.INTERNAL_ERROR.value

    @property
    def delta(self) -> float:
        """Change of the score that counts (a verdict without a score counts 0)."""
        return (self.new.counted or 0.0) - (self.old.counted or 0.0)

    def kept(self, keep: Keep) -> Outcome:
        """The outcome an apply with ``keep`` leaves on the submission."""
        if self.failed or (keep is Keep.HIGHER and (self.new.counted or 0.0) < (self.old.counted or 0.0)):
            return self.old
        return self.new


@dataclass(frozen=True)
class CheckShift:
    """A check (or named mistake) whose outcome moved on some submissions."""

    id: str
    now_failing: int  # a check that now fails; a mistake now named
    now_passing: int  # a check that now passes; a mistake no longer named


@dataclass(frozen=True)
class LearnerShift:
    """A learner whose counted score on the exercise, or board rank, would change."""

    course: str
    user_name: str
    old_score: float
    new_score: float
    old_rank: int
    new_rank: int


@dataclass
class Diff:
    """The whole comparison of a set."""

    changes: list[Change] = field(default_factory=list)
    keep: Keep = Keep.NEW

    @property
    def graded(self) -> list[Change]:
        return [c for c in self.changes if not c.failed]

    @property
    def changed(self) -> list[Change]:
        """The submissions whose verdict, score, checks or named mistakes differ."""
        return [c for c in self.graded if c.changed]

    @property
    def failed(self) -> list[Change]:
        return [c for c in self.changes if c.failed]

    def counts(self) -> dict[str, int]:
        """How many scores go up, go down or stay the same (the score that counts)."""
        tally = Counter("up" if c.delta > 0 else "down" if c.delta < 0 else "same" for c in self.graded)
        return {key: tally.get(key, 0) for key in ("up", "down", "same")}

    def largest(self, limit: int = LARGEST) -> list[Change]:
        """The biggest moves of the score that counts, largest first (ties: lower id)."""
        moved = [c for c in self.graded if c.delta != 0]
        return sorted(moved, key=lambda c: (-abs(c.delta), c.submission_id))[:limit]

    learners: list[LearnerShift] = field(default_factory=list)
    checks: list[CheckShift] = field(default_factory=list)
    mistakes: list[CheckShift] = field(default_factory=list)


def _shifts(pairs: Iterable[tuple[set[str], set[str]]]) -> list[CheckShift]:
    """Per id: how often it entered the first set (failing, named) and how often it left it."""
    entered: Counter[str] = Counter()
    left: Counter[str] = Counter()
    for old, new in pairs:
        entered.update(new - old)
        left.update(old - new)
    return [CheckShift(i, entered[i], left[i]) for i in sorted(set(entered) | set(left))]


def _checks_of(rows: Iterable[Any]) -> tuple[dict[str, bool], frozenset[str]]:
    checks: dict[str, bool] = {}
    mistakes = set()
    for row in rows:
        key = row["check_id"] or row["name"]
        checks[key] = bool(row["passed"])
        if row.get("mistake_id") and not row["passed"]:
            mistakes.add(row["mistake_id"])
    return checks, frozenset(mistakes)


def compute_diff(session: Session, regrade: RegradeSet, keep: Keep = Keep.NEW) -> Diff:
    """Compare every graded result of the set with the submission's verdict now (for an
    applied set: with the verdict it superseded, so the diff still says what the apply did)."""
    rows = (
        session.execute(
            select(RegradeResult, Submission, User.name)
            .join(Submission, Submission.id == RegradeResult.submission_id)
            .join(User, User.id == Submission.user_id)
            .where(RegradeResult.set_id == regrade.id, RegradeResult.status == "done")
            .order_by(Submission.id)
        )
        .tuples()
        .all()
    )
    old_checks: dict[int, list[dict[str, Any]]] = {}
    ids = [sub.id for _, sub, _ in rows]
    for chunk in range(0, len(ids), 500):
        for c in session.scalars(select(CheckResult).where(CheckResult.submission_id.in_(ids[chunk : chunk + 500]))):
            old_checks.setdefault(c.submission_id, []).append(
                {"check_id": c.check_id, "name": c.name, "passed": c.passed, "mistake_id": c.mistake_id}
            )
    superseded = (
        {}
        if regrade.state != "applied"
        else {
            row.submission_id: row
            for row in session.scalars(select(SupersededVerdict).where(SupersededVerdict.set_id == regrade.id))
        }
    )
    diff = Diff(keep=keep)
    for result, sub, name in rows:
        was = superseded.get(sub.id)
        if was is not None:
            checks, mistakes = _checks_of(was.checks or [])
            board = (
                submission_board(was.checks or [], sub.penalty_percent) if was.verdict == Verdict.GRADED.value else None
            )
            old = Outcome(was.verdict, was.score, was.counted_score, checks, mistakes, board)
        else:
            checks, mistakes = _checks_of(old_checks.get(sub.id, []))
            old = Outcome(sub.verdict, sub.score, sub.counted_score, checks, mistakes, sub.board_score)
        new_checks, new_mistakes = _checks_of(result.checks or [])
        graded = result.verdict == Verdict.GRADED.value
        new_counted = submission_counted(result.score, sub.penalty_percent) if graded else None
        new_board = submission_board(result.checks or [], sub.penalty_percent) if graded else None
        new = Outcome(result.verdict, result.score, new_counted, new_checks, new_mistakes, new_board)
        diff.changes.append(Change(sub.id, result.id, sub.course_id, sub.user_id, name, sub.created_at, old, new))
    changed = diff.changed
    diff.checks = _shifts(
        ({k for k, ok in c.old.checks.items() if not ok}, {k for k, ok in c.new.checks.items() if not ok})
        for c in changed
    )
    diff.mistakes = _shifts((set(c.old.mistakes), set(c.new.mistakes)) for c in changed)
    if superseded:  # applied: the rows hold the new verdicts; the board before had the old ones
        replaced = [c for c in changed if c.submission_id in superseded]
        diff.learners = _learner_shifts(
            session, regrade.exercise, replaced, {c.submission_id: c.old for c in replaced}, {}
        )
    else:
        kept = [c for c in changed if c.kept(keep) is c.new]
        diff.learners = _learner_shifts(session, regrade.exercise, kept, {}, {c.submission_id: c.new for c in kept})
    return diff


def _learner_shifts(
    session: Session,
    exercise: str,
    moved: Sequence[Change],
    before_over: dict[int, Outcome],
    after_over: dict[int, Outcome],
) -> list[LearnerShift]:
    """Learners whose score that counts or rank on the exercise's board differs between the
    board with the ``before_over`` outcomes in place of the stored ones and the board with
    ``after_over``, in every course the ``moved`` submissions belong to.

    Each board is the leaderboard's own (``server.leaderboard.service.board``: the one
    counted-score function, overrides and excuses included), read inside a savepoint that
    holds the outcomes and is rolled back, so the diff predicts exactly what boards will show.
    """
    if not moved:
        return []
    shifts: list[LearnerShift] = []
    keys = {(c.course_id, c.user_id) for c in moved}
    for course_id in sorted({c.course_id for c in moved}):
        slug = session.scalar(select(Course.slug).where(Course.id == course_id)) or ""
        before = _board_with(session, exercise, course_id, before_over, keys)
        after = _board_with(session, exercise, course_id, after_over, keys)
        for uid, (name, old_score, old_rank) in before.items():
            _, new_score, new_rank = after.get(uid, (name, 0.0, 0))
            if (old_score, old_rank) != (new_score, new_rank):
                shifts.append(LearnerShift(slug, name, old_score, new_score, old_rank, new_rank))
    return sorted(shifts, key=lambda s: (s.course, -abs(s.new_score - s.old_score), s.user_name))


def _board_with(
    session: Session, exercise: str, course_id: int, over: dict[int, Outcome], keys: set[tuple[int, int]]
) -> dict[int, tuple[str, float, int]]:
    """Per learner on the course's board of ``exercise``: (login, score that counts, rank),
    with ``over``'s outcomes written in a savepoint that is rolled back afterwards."""
    savepoint = session.begin_nested() if over else None
    try:
        for sid, outcome in over.items():
            session.execute(
                update(Submission)
                .where(Submission.id == sid, Submission.course_id == course_id)
                .values(
                    verdict=outcome.verdict,
                    score=outcome.score,
                    counted_score=outcome.counted,
                    board_score=outcome.board,
                )
                .execution_options(synchronize_session=False)
            )
        if over:
            for key_course, user_id in sorted(keys):
                if key_course == course_id:
                    backfill_best_scores(session, course_id, user_id, exercise)
        _, rows = board(session, exercise, 10**9, 0, course_id)
        return {r.user_id: (r.name, r.best, rank) for rank, r in enumerate(rows, start=1)}
    finally:
        if savepoint is not None:
            savepoint.rollback()
