"""What applying a regrade set would change, compared with the verdicts learners see now.

A submission *changed* when its verdict, its raw score, a check's outcome or a named mistake
differs; nothing else (timings, output) counts. Scores move by the score that counts, whose
late penalty stays the one fixed at acceptance. Boards follow the leaderboard's rules
(server.leaderboard.service): per course, learners only, the best counted score, ties broken by
the earliest submission that reached it, then the user id.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.courses.policy import counted_score
from server.courses.service import member_ids_of
from server.models import CheckResult, Course, Keep, RegradeResult, RegradeSet, Submission, User, Verdict

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

    def same_as(self, other: Outcome) -> bool:
        return (self.verdict, self.score, self.checks, self.mistakes) == (other.verdict, other.score, other.checks, other.mistakes)


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
    """Compare every graded result of the set with the submission's verdict now."""
    rows = session.execute(
        select(RegradeResult, Submission, User.name)
        .join(Submission, Submission.id == RegradeResult.submission_id)
        .join(User, User.id == Submission.user_id)
        .where(RegradeResult.set_id == regrade.id, RegradeResult.status == "done")
        .order_by(Submission.id)
    ).tuples().all()
    old_checks: dict[int, list[dict[str, Any]]] = {}
    ids = [sub.id for _, sub, _ in rows]
    for chunk in range(0, len(ids), 500):
        for c in session.scalars(select(CheckResult).where(CheckResult.submission_id.in_(ids[chunk:chunk + 500]))):
            old_checks.setdefault(c.submission_id, []).append(
                {"check_id": c.check_id, "name": c.name, "passed": c.passed, "mistake_id": c.mistake_id})
    diff = Diff(keep=keep)
    for result, sub, name in rows:
        checks, mistakes = _checks_of(old_checks.get(sub.id, []))
        old = Outcome(sub.verdict, sub.score, sub.counted_score, checks, mistakes)
        new_checks, new_mistakes = _checks_of(result.checks or [])
        graded = result.verdict == Verdict.GRADED.value
        new_counted = counted_score(result.score, sub.penalty_percent or 0.0) if graded else None
        new = Outcome(result.verdict, result.score, new_counted, new_checks, new_mistakes)
        diff.changes.append(Change(sub.id, result.id, sub.course_id, sub.user_id, name, sub.created_at, old, new))
    changed = diff.changed
    diff.checks = _shifts(({k for k, ok in c.old.checks.items() if not ok}, {k for k, ok in c.new.checks.items() if not ok})
                          for c in changed)
    diff.mistakes = _shifts((set(c.old.mistakes), set(c.new.mistakes)) for c in changed)
    diff.learners = _learner_shifts(session, regrade.exercise, [c for c in changed if c.kept(keep) is c.new])
    return diff


def _learner_shifts(session: Session, exercise: str, applied: Sequence[Change]) -> list[LearnerShift]:
    """Learners whose best counted score or rank on the exercise's board moves once ``applied``
    replace their verdicts, in every course those submissions belong to."""
    if not applied:
        return []
    replaced = {c.submission_id: c.new for c in applied}
    shifts: list[LearnerShift] = []
    for course_id in sorted({c.course_id for c in applied}):
        slug = session.scalar(select(Course.slug).where(Course.id == course_id)) or ""
        learners = set(session.scalars(member_ids_of(course_id)))
        rows = session.execute(
            select(Submission.id, Submission.user_id, Submission.created_at, Submission.verdict, Submission.counted_score)
            .where(Submission.course_id == course_id, Submission.exercise == exercise,
                   Submission.verdict.is_not(None), Submission.verdict != Verdict.INTERNAL_ERROR.value)
        ).tuples().all()
        before = _board(((sid, uid, at, v, c) for sid, uid, at, v, c in rows if uid in learners))
        after = _board(((sid, uid, at, replaced[sid].verdict, replaced[sid].counted) if sid in replaced else (sid, uid, at, v, c)
                        for sid, uid, at, v, c in rows if uid in learners))
        names = dict(session.execute(select(User.id, User.name).where(User.id.in_(list(before)))).tuples().all())
        for uid, (old_score, old_rank) in before.items():
            new_score, new_rank = after[uid]
            if (old_score, old_rank) != (new_score, new_rank):
                shifts.append(LearnerShift(slug, names.get(uid, str(uid)), old_score, new_score, old_rank, new_rank))
    return sorted(shifts, key=lambda s: (s.course, -abs(s.new_score - s.old_score), s.user_name))


def _board(rows: Iterable[tuple[int, int, datetime, str | None, float | None]]) -> dict[int, tuple[float, int]]:
    """Per learner with an attempt: (best counted score, 1-based rank) by the board's rules."""
    best: dict[int, tuple[float, datetime | None]] = {}
    for _sid, uid, at, verdict, counted in rows:
        score, reached = best.get(uid, (0.0, None))
        if verdict == Verdict.GRADED.value and counted is not None and (
                reached is None or counted > score or (counted == score and at < reached)):
            score, reached = counted, at
        best[uid] = (score, reached)
    order = sorted(best, key=lambda uid: (-best[uid][0], best[uid][1] is None, best[uid][1] or datetime.min, uid))
    return {uid: (best[uid][0], rank) for rank, uid in enumerate(order, start=1)}
