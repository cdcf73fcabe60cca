"""regrade: a version on every verdict; regrade sets, their results, superseded verdicts.

Revision ID: 0013
Revises: 0010
Create Date: 2026-12-01

``submissions`` gains ``content_version`` and ``grader_version`` (exercises/versions.py);
every verdict stored before this migration is marked ``unknown``, so it counts as stale and a
regrade can bring it up to date. Three new tables (``server/models/regrade.py``).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Mirrors UTCDateTime's impl (migrations do not import model code).
Timestamp = sa.DateTime(timezone=True)
#: exercises.versions.UNKNOWN_VERSION, frozen here.
UNKNOWN = "unknown"


def upgrade() -> None:
    """Add the version columns (old rows: unknown) and create the regrade tables.

    Plain ``ALTER TABLE`` on both databases, never a batch copy: on SQLite a copy drops the old
    ``submissions`` table, and with foreign keys on that deletes every row that references it
    (check results, best scores)."""
    for name in ("content_version", "grader_version"):
        op.add_column("submissions", sa.Column(name, sa.String(length=16), nullable=False, server_default=UNKNOWN))
    op.create_table(
        "regrade_sets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("exercise", sa.String(length=64), nullable=False),
        sa.Column("course_id", sa.Integer(), nullable=True),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("submission_id", sa.Integer(), nullable=True),
        sa.Column("all_versions", sa.Boolean(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("content_version", sa.String(length=16), nullable=False),
        sa.Column("grader_version", sa.String(length=16), nullable=False),
        sa.Column("requested_by", sa.Integer(), nullable=True),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.Column("keep", sa.String(length=8), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("applied_at", Timestamp, nullable=True),
        sa.Column("cancelled_at", Timestamp, nullable=True),
        sa.CheckConstraint("state IN ('grading', 'ready', 'applied', 'cancelled')", name=op.f("ck_regrade_sets_state")),
        sa.CheckConstraint("keep IS NULL OR keep IN ('new', 'higher')", name=op.f("ck_regrade_sets_keep")),
        sa.ForeignKeyConstraint(["course_id"], ["courses.id"], name=op.f("fk_regrade_sets_course_id_courses"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_regrade_sets_user_id_users"), ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"], name=op.f("fk_regrade_sets_submission_id_submissions"), ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["requested_by"], ["users.id"], name=op.f("fk_regrade_sets_requested_by_users"), ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_regrade_sets")),
    )
    op.create_table(
        "regrade_results",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("set_id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("verdict", sa.String(length=32), nullable=True),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("checks", sa.JSON(), nullable=False),
        sa.Column("feedback", sa.JSON(), nullable=True),
        sa.Column("stdout", sa.Text(), nullable=False),
        sa.Column("stderr", sa.Text(), nullable=False),
        sa.Column("timings", sa.JSON(), nullable=False),
        sa.Column("peak_memory_bytes", sa.BigInteger(), nullable=True),
        sa.Column("cpu_seconds", sa.Float(), nullable=True),
        sa.Column("content_version", sa.String(length=16), nullable=True),
        sa.Column("grader_version", sa.String(length=16), nullable=True),
        sa.Column("finished_at", Timestamp, nullable=True),
        sa.CheckConstraint("status IN ('queued', 'running', 'done')", name=op.f("ck_regrade_results_status")),
        sa.ForeignKeyConstraint(["set_id"], ["regrade_sets.id"], name=op.f("fk_regrade_results_set_id_regrade_sets"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"], name=op.f("fk_regrade_results_submission_id_submissions"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_regrade_results")),
        sa.UniqueConstraint("set_id", "submission_id", name=op.f("uq_regrade_results_set_id_submission_id")),
    )
    op.create_index("ix_regrade_results_set_id_status", "regrade_results", ["set_id", "status"])
    op.create_index("ix_regrade_results_submission_id", "regrade_results", ["submission_id"])
    op.create_table(
        "superseded_verdicts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("set_id", sa.Integer(), nullable=False),
        sa.Column("verdict", sa.String(length=32), nullable=True),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("counted_score", sa.Float(), nullable=True),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("checks", sa.JSON(), nullable=False),
        sa.Column("feedback", sa.JSON(), nullable=True),
        sa.Column("content_version", sa.String(length=16), nullable=False),
        sa.Column("grader_version", sa.String(length=16), nullable=False),
        sa.Column("finished_at", Timestamp, nullable=True),
        sa.Column("new_verdict", sa.String(length=32), nullable=True),
        sa.Column("new_score", sa.Float(), nullable=True),
        sa.Column("new_counted_score", sa.Float(), nullable=True),
        sa.Column("superseded_at", Timestamp, nullable=False),
        sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"], name=op.f("fk_superseded_verdicts_submission_id_submissions"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["set_id"], ["regrade_sets.id"], name=op.f("fk_superseded_verdicts_set_id_regrade_sets"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_superseded_verdicts")),
    )
    op.create_index("ix_superseded_verdicts_submission_id", "superseded_verdicts", ["submission_id"])
    op.create_index("ix_superseded_verdicts_set_id", "superseded_verdicts", ["set_id"])


def downgrade() -> None:
    """Drop the regrade tables and the version columns (applied regrades stay applied)."""
    op.drop_index("ix_superseded_verdicts_set_id", table_name="superseded_verdicts")
    op.drop_index("ix_superseded_verdicts_submission_id", table_name="superseded_verdicts")
    op.drop_table("superseded_verdicts")
    op.drop_index("ix_regrade_results_submission_id", table_name="regrade_results")
    op.drop_index("ix_regrade_results_set_id_status", table_name="regrade_results")
    op.drop_table("regrade_results")
    op.drop_table("regrade_sets")
    for name in ("grader_version", "content_version"):
        if op.get_bind().dialect.name == "sqlite":  # ALTER TABLE ... DROP COLUMN (SQLite 3.35+): no table copy
            op.execute(f"ALTER TABLE submissions DROP COLUMN {name}")
        else:
            op.drop_column("submissions", name)
