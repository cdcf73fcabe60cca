"""The score that counts: one pure function, and the one reader every view calls.

Every place a person or a program reads a course's scores (the API, ``ppo-submit history``
and ``show``, the dashboard's pages, the boards, the statistics, both gradebooks) gets them
from :func:`course_scores`, which builds each learner's :class:`ExerciseScore` with
:func:`score_that_counts`. Nothing else decides what counts, and :func:`describe` is the
one way a score is written out for people, so every view shows it the same way.

The rules, in order:

1. the raw score of a submission is the judge's, never changed;
2. a late submission loses ``penalty_percent`` of its raw score (``server.courses.policy``:
   per started day or hour past the learner's due date, extension included); the result is
   that submission's counted score (:func:`submission_counted`);
3. per learner and exercise, the submission that counts is the one with the highest
   counted score (the earliest on a tie: ``best_scores``);
4. an override (set by hand, with a reason) replaces that score;
5. an excuse takes the exercise out of the learner's average: the counted score is None,
   the gradebooks leave the cell empty and the boards add nothing for it;
6. a learner with attempts but no graded run counts 0; with no attempt, nothing (None).

Two rules every board, statistic and selection shares live here too, once each:
:func:`counts_as_attempt` (a finished submission the grader did not fail; SQL, and
:func:`is_attempt` for one verdict) and :func:`submission_board` (the board score, from the
judge's per-check ``self_reported`` flag stored on each check row). The attempt limit counts
another set of rows, :func:`uses_an_attempt`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, or_, select
from sqlalchemy.orm import Session

from server.courses.policy import counted_score
from server.models import BestScore, Course, Extension, ScoreCorrection, Submission, Verdict
from server.times import local_time

#: A full score (raw, counted or board): what "solved" means everywhere.
FULL_SCORE = 100.0


def is_attempt(verdict: str | None) -> bool:
    """One submission's verdict counts as an attempt: it has one (it finished) and it is not
    ``internal_error`` (the grader's fault never counts). :func:`counts_as_attempt` in SQL."""
    return verdict is not None and verdict != Verdict.INTERNAL_ERROR.value


def counts_as_attempt() -> ColumnElement[bool]:
    """SQL: the submissions that count as attempts (:func:`is_attempt`), for the boards,
    ``best_scores``, statistics, regrades and similarity. Queued and running rows are not yet."""
    return and_(Submission.verdict.is_not(None), Submission.verdict != Verdict.INTERNAL_ERROR.value)


def uses_an_attempt() -> ColumnElement[bool]:
    """SQL: the submissions an attempt limit counts: every one the grader did not fail, queued
    and running ones too (so a burst cannot overrun the limit before its verdicts arrive)."""
    return or_(Submission.verdict.is_(None), Submission.verdict != Verdict.INTERNAL_ERROR.value)


@dataclass(frozen=True)
class CountingSubmission:
    """The submission that counts for one learner and exercise, as it was graded."""

    submission_id: int
    raw: float
    late_seconds: int | None
    penalty_percent: float
    submitted_at: datetime


@dataclass(frozen=True)
class Correction:
    """A hand correction in force: an override's score (None for an excuse), who, when, why."""

    id: int
    score: float | None
    reason: str
    made_by: str
    made_at: datetime


@dataclass(frozen=True)
class ExerciseScore:
    """Everything about one learner's score on one exercise of one course."""

    user_id: int
    exercise: str
    #: The highest raw score over graded runs (None: no graded run).
    raw_best: float | None
    #: The submission that counts (None: no graded run).
    counting: CountingSubmission | None
    attempts: int
    #: The learner's extended due date, when they have one.
    extended_to: datetime | None
    override: Correction | None
    excuse: Correction | None
    #: The score that counts (None: excused, or never attempted).
    counted: float | None
    #: When the score that counts was first reached (a board's tie-break), and when it first was full.
    reached_at: datetime | None = None
    solved_at: datetime | None = None
    #: What the boards rank by: the best board score that counts (confirmed checks only,
    #: ``submission_board``; the counted score for verdicts without one), the override under an
    #: override, None when excused; and when it was first reached.
    board: float | None = None
    board_reached_at: datetime | None = None

    @property
    def late(self) -> bool:
        """Whether the submission that counts was late (and no override replaced it)."""
        return self.override is None and self.counting is not None and self.counting.late_seconds is not None

    @property
    def penalty_percent(self) -> float:
        """The late penalty the score that counts carries (0 under an override)."""
        return self.counting.penalty_percent if self.late and self.counting is not None else 0.0

    @property
    def excused(self) -> bool:
        return self.excuse is not None

    @property
    def solved(self) -> bool:
        """A full score that counts (an excused exercise is not solved)."""
        return self.counted is not None and self.counted >= FULL_SCORE

    @property
    def points(self) -> float:
        """The counted score, 0 when excused or unattempted."""
        return self.counted or 0.0

    @property
    def board_points(self) -> float:
        """What the exercise adds to a board's total: the board score, 0 when excused or unattempted."""
        return self.board or 0.0

    @property
    def board_solved(self) -> bool:
        """Every confirmed check passed, on time (what a board counts as solved)."""
        return self.board is not None and self.board >= FULL_SCORE


def submission_counted(raw: float | None, penalty_percent: float | None) -> float | None:
    """One graded submission's counted score: ``raw`` less its late penalty (rule 2)."""
    return counted_score(raw, penalty_percent or 0.0)


def submission_board(checks: Iterable[Any], penalty_percent: float | None) -> float | None:
    """One graded submission's board score, from its stored check rows (``CheckResult``
    objects or their dicts): :func:`board_share` less its late penalty. A row counts as
    confirmed only when it says so (``self_reported`` false, as the judge said when it was
    stored: ``server.grading.persistence.storable``); a row without the flag (a regrade's
    result stored before migration 0020) is not confirmed."""

    def fields(check: Any) -> tuple[float, bool, bool]:
        def get(name: str, default: Any = None) -> Any:
            return check.get(name, default) if isinstance(check, Mapping) else getattr(check, name, default)

        return (float(get("weight") or 0.0), bool(get("passed")), get("self_reported", True) is not False)

    return submission_counted(board_share(fields(c) for c in checks), penalty_percent)


def board_share(checks: Iterable[tuple[float, bool, bool]]) -> float:
    """What the boards rank by, before a late penalty: 100 x the passed confirmed checks' weight
    / all confirmed checks' weight, to 2 decimals, from (weight, passed, self-reported) per check;
    0 when no check is confirmed. A self-reported check's points count in the score, never on
    the boards, so forging what only the learner's process reports (detachment, in-place edits,
    gradient provenance) cannot raise a board place above identical honest code
    (docs/security.md)."""
    confirmed = [(weight, passed) for weight, passed, self_reported in checks if not self_reported]
    total = sum(weight for weight, _ in confirmed)
    if total <= 0:
        return 0.0
    return round(100.0 * sum(weight for weight, passed in confirmed if passed) / total, 2)


def score_that_counts(
    user_id: int,
    exercise: str,
    *,
    raw_best: float | None,
    counting: CountingSubmission | None,
    attempts: int,
    extended_to: datetime | None = None,
    override: Correction | None = None,
    excuse: Correction | None = None,
    reached_at: datetime | None = None,
    solved_at: datetime | None = None,
    board: float | None = None,
    board_reached_at: datetime | None = None,
) -> ExerciseScore:
    """The score that counts for one learner on one exercise (rules 3 to 6), as a pure
    function. ``reached_at`` and ``solved_at`` are the graded runs' (``best_scores``); an
    override moves them to when it was made, an excuse clears them. ``board`` and
    ``board_reached_at`` are the best board score's (``best_scores``); a correction replaces them
    with the score that counts."""
    if excuse is not None:
        counted: float | None = None
        reached_at = solved_at = None
    elif override is not None:
        counted = override.score
        reached_at = override.made_at
        solved_at = override.made_at if counted is not None and counted >= FULL_SCORE else None
    elif counting is not None:
        counted = submission_counted(counting.raw, counting.penalty_percent)
    else:
        counted = 0.0 if attempts else None
    if excuse is not None or override is not None or board is None:
        board, board_reached_at = counted, reached_at  # a correction decides the board too
    return ExerciseScore(
        user_id,
        exercise,
        raw_best,
        counting,
        attempts,
        extended_to,
        override,
        excuse,
        counted,
        reached_at,
        solved_at,
        board,
        board_reached_at or reached_at,
    )


def describe(score: ExerciseScore | None, zone_name: str = "UTC") -> str:
    """The score that counts as people read it, the same on every page and in every terminal:
    ``90 (raw 100, late 1d 2h: -10%)``, ``85 (override by prof: regrade by hand)``,
    ``excused (by prof: illness)``, ``-`` when never attempted."""
    if score is None or (score.counted is None and not score.excused):
        return "-"
    if score.excuse is not None:
        return f"excused (by {score.excuse.made_by}: {score.excuse.reason})"
    text = f"{score.counted:g}"
    notes = []
    if score.override is not None:
        notes.append(f"override by {score.override.made_by}: {score.override.reason}")
    elif score.counting is not None:
        if score.counting.raw != score.counted:
            notes.append(f"raw {score.counting.raw:g}")
        if score.counting.late_seconds is not None:
            notes.append(f"late {late_by(score.counting.late_seconds)}: -{score.counting.penalty_percent:g}%")
    if score.extended_to is not None:
        notes.append(f"extended to {_local(score.extended_to, zone_name)}")
    return text + (f" ({', '.join(notes)})" if notes else "")


def late_by(seconds: int) -> str:
    """A lateness in days, hours and minutes (``1d 2h``, ``3h 5m``, ``12m``; under a minute: ``1m``)."""
    minutes = max(1, (seconds + 59) // 60)
    days, rest = divmod(minutes, 1440)
    hours, mins = divmod(rest, 60)
    parts = [f"{days}d" if days else "", f"{hours}h" if hours else "", f"{mins}m" if mins and not days else ""]
    return " ".join(p for p in parts if p) or "1m"


def _local(moment: datetime, zone_name: str) -> str:
    return local_time(moment, zone_name, seconds=False)


# --- the reader ----------------------------------------------------------------------------

Key = tuple[int, str]


def course_scores(
    session: Session,
    course: Course | int,
    user_ids: Iterable[int] | None = None,
    exercises: Iterable[str] | None = None,
) -> dict[Key, ExerciseScore]:
    """Every (learner, exercise) of ``course`` that has attempts or a correction, keyed by
    ``(user_id, exercise)``, optionally only for ``user_ids`` and ``exercises``. Four queries
    however many learners: ``best_scores`` with the submission that counts, extensions and
    the corrections in force."""
    course_id = course if isinstance(course, int) else course.id
    users = None if user_ids is None else list(user_ids)
    slugs = None if exercises is None else list(exercises)

    def narrow(query, model):  # type: ignore[no-untyped-def]
        query = query.where(model.course_id == course_id)
        if users is not None:
            query = query.where(model.user_id.in_(users))
        if slugs is not None:
            query = query.where(model.exercise.in_(slugs))
        return query

    S, B = Submission, BestScore
    rows = session.execute(
        narrow(
            select(
                B.user_id,
                B.exercise,
                B.best_score,
                B.attempts,
                S.id,
                S.score,
                S.late_seconds,
                S.penalty_percent,
                S.created_at,
                B.counted_reached_at,
                B.solved_at,
                B.board_score,
                B.board_reached_at,
            ).outerjoin(S, S.id == B.counted_submission_id),
            B,
        )
    ).tuples()
    base: dict[
        Key,
        tuple[
            float | None,
            int,
            CountingSubmission | None,
            datetime | None,
            datetime | None,
            float | None,
            datetime | None,
        ],
    ] = {}
    for user_id, exercise, raw_best, attempts, sid, raw, late, penalty, at, reached, solved, board, board_at in rows:
        counting = (
            None if sid is None or raw is None else CountingSubmission(sid, float(raw), late, float(penalty or 0.0), at)
        )
        base[(user_id, exercise)] = (
            None if raw_best is None else float(raw_best),
            int(attempts or 0),
            counting,
            reached,
            solved,
            None if board is None else float(board),
            board_at,
        )
    extended = {
        (user_id, exercise): due
        for user_id, exercise, due in session.execute(
            narrow(select(Extension.user_id, Extension.exercise, Extension.due_at), Extension)
        ).tuples()
    }
    overrides, excuses = corrections_in_force(session, narrow(select(ScoreCorrection), ScoreCorrection))
    out: dict[Key, ExerciseScore] = {}
    for key in set(base) | set(overrides) | set(excuses):
        raw_best, attempts, counting, reached, solved, board, board_at = base.get(
            key, (None, 0, None, None, None, None, None)
        )
        out[key] = score_that_counts(
            key[0],
            key[1],
            raw_best=raw_best,
            counting=counting,
            attempts=attempts,
            extended_to=extended.get(key),
            override=overrides.get(key),
            excuse=excuses.get(key),
            reached_at=reached,
            solved_at=solved,
            board=board,
            board_reached_at=board_at,
        )
    return out


def corrections_in_force(session: Session, query) -> tuple[dict[Key, Correction], dict[Key, Correction]]:  # type: ignore[no-untyped-def]
    """(overrides, excuses) in force among the ``ScoreCorrection`` rows ``query`` selects:
    the newest unrevoked row of each kind per learner and exercise."""
    overrides: dict[Key, Correction] = {}
    excuses: dict[Key, Correction] = {}
    rows = session.scalars(query.where(ScoreCorrection.revoked_at.is_(None)).order_by(ScoreCorrection.id))
    for row in rows:
        target = overrides if row.kind == "override" else excuses
        target[(row.user_id, row.exercise)] = Correction(row.id, row.score, row.reason, row.made_by, row.made_at)
    return overrides, excuses
