"""feedback policy: what a learner sees of a verdict, per exercise set, and the tokens spent.

Revision ID: 0015
Revises: 0010
Create Date: 2026-12-01

``set_entries.feedback_policy`` (``full`` for every existing entry: nothing changes for
them) and the ``feedback_tokens`` table of ``tokens:N`` sets (``server/models/course.py``).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Mirrors UTCDateTime's impl (migrations do not import model code).
Timestamp = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Add the column (default ``full``) and the tokens table."""
    # In place, never a batch copy (on SQLite a copy drops the table, and foreign keys cascade).
    op.add_column("set_entries", sa.Column("feedback_policy", sa.String(length=32), nullable=False, server_default="full"))
    op.create_table(
        "feedback_tokens",
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("course_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("exercise", sa.String(length=64), nullable=False),
        sa.Column("spent_at", Timestamp, nullable=False),
        sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"], name=op.f("fk_feedback_tokens_submission_id_submissions"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["course_id"], ["courses.id"], name=op.f("fk_feedback_tokens_course_id_courses"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_feedback_tokens_user_id_users"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("submission_id", name=op.f("pk_feedback_tokens")),
    )
    op.create_index(
        "ix_feedback_tokens_course_id_user_id_exercise_spent_at", "feedback_tokens",
        ["course_id", "user_id", "exercise", "spent_at"],
    )


def downgrade() -> None:
    """Drop them (every set is back to full feedback; spent tokens are forgotten)."""
    op.drop_index("ix_feedback_tokens_course_id_user_id_exercise_spent_at", table_name="feedback_tokens")
    op.drop_table("feedback_tokens")
    if op.get_bind().dialect.name == "sqlite":  # in place (SQLite 3.35+), as in upgrade()
        op.execute("ALTER TABLE set_entries DROP COLUMN feedback_policy")
    else:
        op.drop_column("set_entries", "feedback_policy")
