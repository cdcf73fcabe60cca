"""The ``best_scores`` table's two writers: the incremental upsert (one per stored verdict,
in the verdict's transaction) and the backfill from ``submissions`` (migration 0004, the
benchmark, and the rare re-count of one key). Both follow ``server.leaderboard.service``'s
rules; ``tests/instructor/test_best_scores.py`` checks that they agree.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, and_, case, or_, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

# Plain SQL (not model code) so migration 0004 keeps working as the models change. The
# correlated subqueries are answered from the 0002 covering index.
_BACKFILL = """
INSERT INTO best_scores (user_id, exercise, best_score, attempts, best_reached_at, best_submission_id, solved_at)
SELECT p.user_id, p.exercise, p.best, p.attempts,
  (SELECT MIN(s.created_at) FROM submissions s
    WHERE s.user_id = p.user_id AND s.exercise = p.exercise AND s.verdict = 'graded' AND s.score = p.best),
  (SELECT s.id FROM submissions s
    WHERE s.user_id = p.user_id AND s.exercise = p.exercise AND s.verdict = 'graded' AND s.score = p.best
    ORDER BY s.created_at, s.id LIMIT 1),
  p.solved_at
FROM (
  SELECT user_id, exercise,
    MAX(CASE WHEN verdict = 'graded' THEN score END) AS best,
    COUNT(*) AS attempts,
    MIN(CASE WHEN verdict = 'graded' AND score >= 100 THEN created_at END) AS solved_at
  FROM submissions
  WHERE verdict IS NOT NULL AND verdict <> 'internal_error' {where}
  GROUP BY user_id, exercise
) p
"""

FULL_SCORE = 100.0


def backfill_best_scores(conn: Connection | Session, user_id: int | None = None, exercise: str | None = None) -> None:
    """Rebuild ``best_scores`` from ``submissions`` in one INSERT ... SELECT (SQLite and
    PostgreSQL): every key, or only ``(user_id, exercise)``. Existing rows for those keys
    are deleted first, in the caller's transaction."""
    if user_id is None:
        conn.execute(text("DELETE FROM best_scores"))
        conn.execute(text(_BACKFILL.format(where="")))
        return
    params = {"user_id": user_id, "exercise": exercise}
    conn.execute(text("DELETE FROM best_scores WHERE user_id = :user_id AND exercise = :exercise"), params)
    conn.execute(text(_BACKFILL.format(where="AND user_id = :user_id AND exercise = :exercise")), params)


def record_verdict(
    session: Session,
    *,
    user_id: int,
    exercise: str,
    submission_id: int,
    created_at: datetime,
    verdict: str,
    score: float | None,
) -> None:
    """Count one newly stored verdict in ``best_scores`` with a single upsert.

    The max, the first time it was reached and the attempt count are computed by the
    database from the row as it is at write time (``ON CONFLICT DO UPDATE`` locks it), so
    two workers storing verdicts of the same learner and exercise cannot lose an update.
    ``internal_error`` is not an attempt and changes nothing.
    """
    from server.models import BestScore, Verdict

    if verdict == Verdict.INTERNAL_ERROR.value:
        return
    graded = verdict == Verdict.GRADED.value and score is not None
    solved = graded and score >= FULL_SCORE  # type: ignore[operator]
    values = {
        "user_id": user_id,
        "exercise": exercise,
        "attempts": 1,
        "best_score": score if graded else None,
        "best_reached_at": created_at if graded else None,
        "best_submission_id": submission_id if graded else None,
        "solved_at": created_at if solved else None,
    }
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    stmt = insert(BestScore).values(**values)
    new, old = stmt.excluded, BestScore.__table__.c
    set_: dict[str, object] = {"attempts": old.attempts + 1}
    if graded:
        better = or_(
            old.best_score.is_(None),
            new.best_score > old.best_score,
            and_(
                new.best_score == old.best_score,
                or_(
                    old.best_reached_at.is_(None),
                    new.best_reached_at < old.best_reached_at,
                    and_(
                        new.best_reached_at == old.best_reached_at,
                        or_(old.best_submission_id.is_(None), new.best_submission_id < old.best_submission_id),
                    ),
                ),
            ),
        )
        for column in ("best_score", "best_reached_at", "best_submission_id"):
            set_[column] = case((better, getattr(new, column)), else_=old[column])
    if solved:
        first = or_(old.solved_at.is_(None), new.solved_at < old.solved_at)
        set_["solved_at"] = case((first, new.solved_at), else_=old.solved_at)
    session.execute(stmt.on_conflict_do_update(index_elements=[old.user_id, old.exercise], set_=set_))
