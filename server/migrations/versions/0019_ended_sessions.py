"""ended sessions: logouts in the database, and the feedback policy each submission is under
(issue 31).

Revision ID: 0019_ended_sessions
Revises: 0018_exercise_versions
Create Date: 2026-12-03

``ended_sessions``: the nonces of web sessions logged out before their cookie expired, so a
logged-out cookie stays refused after a restart and by every API process (it was a set in one
process's memory). Rows live until the cookie's own expiry, then are pruned.

``submissions.feedback_policy`` and ``submissions.feedback_due_at``: the set's policy and due
date a submission is under, so that deleting a set entry (unpublishing) no longer shows a
hidden verdict in full. Existing rows take their set entry's, where it still exists; the rest
(the default course's open exercises, sets deleted before this migration) stay NULL: full, as
before. The downgrade drops both.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019_ended_sessions"
down_revision: str | None = "0018_exercise_versions"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Mirrors UTCDateTime's impl (migrations do not import model code).
Timestamp = sa.DateTime(timezone=True)

_INDEX = "ix_submissions_course_id_exercise_policy_due"
_ENTRY = "FROM set_entries e WHERE e.course_id = submissions.course_id AND e.exercise = submissions.exercise"


def upgrade() -> None:
    """Create ``ended_sessions``; add the two columns, filled from the set entries, and their index."""
    op.create_table(
        "ended_sessions",
        sa.Column("nonce", sa.String(length=64), nullable=False),
        sa.Column("expires_at", Timestamp, nullable=False),
        sa.PrimaryKeyConstraint("nonce", name=op.f("pk_ended_sessions")),
    )
    op.create_index(op.f("ix_ended_sessions_expires_at"), "ended_sessions", ["expires_at"])
    # In place, never a batch copy (on SQLite a copy drops the table, and foreign keys cascade).
    op.add_column("submissions", sa.Column("feedback_policy", sa.String(length=32), nullable=True))
    op.add_column("submissions", sa.Column("feedback_due_at", Timestamp, nullable=True))
    op.execute(
        f"UPDATE submissions SET feedback_policy = (SELECT e.feedback_policy {_ENTRY}), "
        f"feedback_due_at = (SELECT e.due_at {_ENTRY}) WHERE EXISTS (SELECT 1 {_ENTRY})"
    )
    op.create_index(_INDEX, "submissions", ["course_id", "exercise", "feedback_policy", "feedback_due_at"])


def downgrade() -> None:
    """Drop them (logouts are forgotten; a deleted set's submissions show in full again)."""
    op.drop_index(_INDEX, table_name="submissions")
    for column in ("feedback_due_at", "feedback_policy"):
        if op.get_bind().dialect.name == "sqlite":  # in place (SQLite 3.35+), as in upgrade()
            op.execute(f"ALTER TABLE submissions DROP COLUMN {column}")
        else:
            op.drop_column("submissions", column)
    op.drop_index(op.f("ix_ended_sessions_expires_at"), table_name="ended_sessions")
    op.drop_table("ended_sessions")
