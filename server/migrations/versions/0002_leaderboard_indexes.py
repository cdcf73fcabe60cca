"""Indexes for the leaderboard, statistics, gradebook and per-learner queue cap.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30

- ``ix_submissions_exercise_user_id_verdict_score_created_at``: the leaderboard, the
  gradebook and the stats group one exercise's rows by learner and need only these
  columns, so the aggregate is answered from the index alone (a covering index).
- ``ix_submissions_user_id_status``: how many of a learner's submissions are queued.
- ``ix_check_results_submission_id_name_passed``: per-check failure rates read the check
  rows of one exercise's submissions without touching the table.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the three indexes."""
    op.create_index(
        "ix_submissions_exercise_user_id_verdict_score_created_at",
        "submissions",
        ["exercise", "user_id", "verdict", "score", "created_at"],
    )
    op.create_index("ix_submissions_user_id_status", "submissions", ["user_id", "status"])
    op.create_index(
        "ix_check_results_submission_id_name_passed",
        "check_results",
        ["submission_id", "name", "passed"],
    )


def downgrade() -> None:
    """Drop them."""
    op.drop_index("ix_check_results_submission_id_name_passed", table_name="check_results")
    op.drop_index("ix_submissions_user_id_status", table_name="submissions")
    op.drop_index("ix_submissions_exercise_user_id_verdict_score_created_at", table_name="submissions")
