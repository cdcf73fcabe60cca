"""best_scores: one row per (user, exercise) for the leaderboard and gradebook.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29

The overall board and the gradebook aggregated every submission per request (~0.7 s at
100,000 submissions). This table holds each (user, exercise)'s best score, attempts, when
the best was first reached (and by which submission) and when it was first solved. It is
kept current by an upsert in the transaction that stores each verdict
(``server.grading.persistence``) and filled here from the existing submissions with one
INSERT ... SELECT (plain SQL, frozen here: the module's backfill has since learned about
courses, migration 0006, and must not run against this revision's tables).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

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
  WHERE verdict IS NOT NULL AND verdict <> 'internal_error'
  GROUP BY user_id, exercise
) p
"""

# Mirrors UTCDateTime's impl (migrations do not import model code).
Timestamp = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create the table and fill it from the submissions already stored."""
    op.create_table(
        "best_scores",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("exercise", sa.String(length=64), nullable=False),
        sa.Column("best_score", sa.Float(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("best_reached_at", Timestamp, nullable=True),
        sa.Column("best_submission_id", sa.Integer(), nullable=True),
        sa.Column("solved_at", Timestamp, nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_best_scores_user_id_users", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["best_submission_id"],
            ["submissions.id"],
            name="fk_best_scores_best_submission_id_submissions",
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("user_id", "exercise", name="pk_best_scores"),
    )
    op.execute(sa.text(_BACKFILL))


def downgrade() -> None:
    """Drop it; the submissions still hold everything."""
    op.drop_table("best_scores")
