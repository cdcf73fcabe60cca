"""board scores: what the boards rank by, per submission and per (course, learner, exercise).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01

``submissions.board_score``: the score that counts computed from the confirmed checks only
(self-reported checks left out; ``exercises.scoring.board_score``), NULL for verdicts stored
before this revision, which the boards then rank by their score that counts as before.
``best_scores`` gains ``board_score``, ``board_reached_at`` and ``board_submission_id``, kept
like the counted triple; existing rows start as copies of it.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Mirrors UTCDateTime's impl (migrations do not import model code).
Timestamp = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Add the columns; best_scores' board triple starts as its counted one."""
    # In place, never a batch copy: check_results rows cascade from submissions on SQLite.
    op.add_column("submissions", sa.Column("board_score", sa.Float(), nullable=True))
    with op.batch_alter_table("best_scores") as batch:
        batch.add_column(sa.Column("board_score", sa.Float(), nullable=True))
        batch.add_column(sa.Column("board_reached_at", Timestamp, nullable=True))
        batch.add_column(sa.Column("board_submission_id", sa.Integer(), nullable=True))
        batch.create_foreign_key(
            "fk_best_scores_board_submission_id_submissions", "submissions", ["board_submission_id"], ["id"],
            ondelete="SET NULL",
        )
    op.execute("UPDATE best_scores SET board_score = counted_score, board_reached_at = counted_reached_at, "
               "board_submission_id = counted_submission_id")


def downgrade() -> None:
    """Drop the columns."""
    with op.batch_alter_table("best_scores") as batch:
        batch.drop_constraint("fk_best_scores_board_submission_id_submissions", type_="foreignkey")
        batch.drop_column("board_submission_id")
        batch.drop_column("board_reached_at")
        batch.drop_column("board_score")
    # check_results rows cascade from submissions: a batch copy of that table on SQLite would
    # delete them, so the column is dropped in place (SQLite 3.35+).
    if op.get_bind().dialect.name == "sqlite":
        op.execute("ALTER TABLE submissions DROP COLUMN board_score")
    else:
        op.drop_column("submissions", "board_score")
