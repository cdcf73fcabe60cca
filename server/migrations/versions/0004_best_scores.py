"""best_scores: one row per (user, exercise) for the leaderboard and gradebook.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29

The overall board and the gradebook aggregated every submission per request (~0.7 s at
100,000 submissions). This table holds each (user, exercise)'s best score, attempts, when
the best was first reached (and by which submission) and when it was first solved. It is
kept current by an upsert in the transaction that stores each verdict
(``server.grading.persistence``) and filled here from the existing submissions with one
INSERT ... SELECT (``server.leaderboard.best_scores.backfill_best_scores``, plain SQL).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from server.leaderboard.best_scores import backfill_best_scores

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

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
    backfill_best_scores(op.get_bind())


def downgrade() -> None:
    """Drop it; the submissions still hold everything."""
    op.drop_table("best_scores")
