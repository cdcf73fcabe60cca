"""The ``best_scores`` table's two writers: the incremental upsert (one per stored verdict,
in the verdict's transaction) and the backfill from ``submissions`` (the benchmark and the
rare re-count of one key; migrations 0004 and 0006 carry frozen copies). Both follow
``server.leaderboard.service``'s rules, per course, for the raw score and for the score
that counts; ``tests/server/leaderboard/test_best_scores.py`` checks that they agree.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, and_, case, or_, text
from sqlalchemy.orm import Session

from server.courses.counted import FULL_SCORE, counts_as_attempt, is_attempt
from server.db import dialect_insert
from server.models import BestScore, Verdict

#: The attempt rule (``counts_as_attempt``) as SQL text, for the backfill's plain SQL.
_ATTEMPT = str(counts_as_attempt().compile(compile_kwargs={"literal_binds": True}))
#: A submission's board score; verdicts stored before migration 0011 have none and rank by the
#: score that counts.
_BOARD = "COALESCE(s.board_score, s.counted_score)"
_KEY = "s.course_id = p.course_id AND s.user_id = p.user_id AND s.exercise = p.exercise AND s.verdict = 'graded'"

# Plain SQL, one INSERT ... SELECT on SQLite and PostgreSQL. For each of the raw score and
# the score that counts: the max, the first submission time it was reached, and that row.
_BACKFILL = f"""
INSERT INTO best_scores (course_id, user_id, exercise, best_score, attempts, best_reached_at, best_submission_id,
                         counted_score, counted_reached_at, counted_submission_id,
                         board_score, board_reached_at, board_submission_id, solved_at)
SELECT p.course_id, p.user_id, p.exercise, p.best, p.attempts,
  (SELECT MIN(s.created_at) FROM submissions s WHERE {_KEY} AND s.score = p.best),
  (SELECT s.id FROM submissions s WHERE {_KEY} AND s.score = p.best ORDER BY s.created_at, s.id LIMIT 1),
  p.counted,
  (SELECT MIN(s.created_at) FROM submissions s WHERE {_KEY} AND s.counted_score = p.counted),
  (SELECT s.id FROM submissions s WHERE {_KEY} AND s.counted_score = p.counted ORDER BY s.created_at, s.id LIMIT 1),
  p.board,
  (SELECT MIN(s.created_at) FROM submissions s WHERE {_KEY} AND {_BOARD} = p.board),
  (SELECT s.id FROM submissions s WHERE {_KEY} AND {_BOARD} = p.board ORDER BY s.created_at, s.id LIMIT 1),
  p.solved_at
FROM (
  SELECT course_id, user_id, exercise,
    MAX(CASE WHEN verdict = 'graded' THEN score END) AS best,
    MAX(CASE WHEN verdict = 'graded' THEN counted_score END) AS counted,
    MAX(CASE WHEN verdict = 'graded' THEN COALESCE(board_score, counted_score) END) AS board,
    COUNT(*) AS attempts,
    MIN(CASE WHEN verdict = 'graded' AND counted_score >= {FULL_SCORE} THEN created_at END) AS solved_at
  FROM submissions
  WHERE {_ATTEMPT} {{where}}
  GROUP BY course_id, user_id, exercise
) p
"""


def backfill_best_scores(
    conn: Connection | Session,
    course_id: int | None = None,
    user_id: int | None = None,
    exercise: str | None = None,
) -> None:
    """Rebuild ``best_scores`` from ``submissions``: every key, or only ``(course_id,
    user_id, exercise)``. Existing rows for those keys are deleted first, in the caller's
    transaction."""
    if user_id is None:
        conn.execute(text("DELETE FROM best_scores"))
        conn.execute(text(_BACKFILL.format(where="")))
        return
    params = {"course_id": course_id, "user_id": user_id, "exercise": exercise}
    key = "course_id = :course_id AND user_id = :user_id AND exercise = :exercise"
    conn.execute(text(f"DELETE FROM best_scores WHERE {key}"), params)
    conn.execute(text(_BACKFILL.format(where=f"AND {key}")), params)


def record_verdict(
    session: Session,
    *,
    course_id: int,
    user_id: int,
    exercise: str,
    submission_id: int,
    created_at: datetime,
    verdict: str,
    score: float | None,
    counted_score: float | None,
    board_score: float | None = None,
) -> None:
    """Count one newly stored verdict in ``best_scores`` with a single upsert.

    The maxima, the first times they were reached and the attempt count are computed by the
    database from the row as it is at write time (``ON CONFLICT DO UPDATE`` locks it), so
    two workers storing verdicts of the same learner and exercise cannot lose an update.
    ``internal_error`` is not an attempt and changes nothing.
    """
    if not is_attempt(verdict):
        return
    graded = verdict == Verdict.GRADED.value and score is not None
    counted = counted_score if graded and counted_score is not None else (score if graded else None)
    board = board_score if graded and board_score is not None else counted
    solved = graded and counted is not None and counted >= FULL_SCORE
    values = {
        "course_id": course_id,
        "user_id": user_id,
        "exercise": exercise,
        "attempts": 1,
        "best_score": score if graded else None,
        "best_reached_at": created_at if graded else None,
        "best_submission_id": submission_id if graded else None,
        "counted_score": counted,
        "counted_reached_at": created_at if graded else None,
        "counted_submission_id": submission_id if graded else None,
        "board_score": board,
        "board_reached_at": created_at if graded else None,
        "board_submission_id": submission_id if graded else None,
        "solved_at": created_at if solved else None,
    }
    stmt = dialect_insert(session.get_bind().dialect.name)(BestScore).values(**values)
    new, old = stmt.excluded, BestScore.__table__.c
    set_: dict[str, object] = {"attempts": old.attempts + 1}
    if graded:
        for prefix, score_column in (("best", "best_score"), ("counted", "counted_score"), ("board", "board_score")):
            better = _better(new, old, score_column, f"{prefix}_reached_at", f"{prefix}_submission_id")
            for column in (score_column, f"{prefix}_reached_at", f"{prefix}_submission_id"):
                set_[column] = case((better, getattr(new, column)), else_=old[column])
    if solved:
        first = or_(old.solved_at.is_(None), new.solved_at < old.solved_at)
        set_["solved_at"] = case((first, new.solved_at), else_=old.solved_at)
    key = [old.course_id, old.user_id, old.exercise]
    session.execute(stmt.on_conflict_do_update(index_elements=key, set_=set_))


def _better(new, old, score: str, reached: str, submission: str):  # type: ignore[no-untyped-def]
    """SQL: the new row beats the stored one (higher, or as high and earlier, or the lower id)."""
    return or_(
        old[score].is_(None),
        new[score] > old[score],
        and_(
            new[score] == old[score],
            or_(
                old[reached].is_(None),
                new[reached] < old[reached],
                and_(new[reached] == old[reached], or_(old[submission].is_(None), new[submission] < old[submission])),
            ),
        ),
    )
