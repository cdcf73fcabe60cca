"""similarity: runs over a course, the pairs they rank, instructors' review marks.

Revision ID: 0010
Revises: 0006
Create Date: 2026-12-01

Three new tables, nothing existing is touched (see ``server/models/similarity.py``).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Mirrors UTCDateTime's impl (migrations do not import model code).
Timestamp = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create the three tables."""
    op.create_table(
        "similarity_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("course_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.String(length=16), nullable=False),
        sa.Column("requested_by", sa.Integer(), nullable=True),
        sa.Column("requested_at", Timestamp, nullable=False),
        sa.Column("started_at", Timestamp, nullable=True),
        sa.Column("finished_at", Timestamp, nullable=True),
        sa.Column("summary", sa.JSON(), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.CheckConstraint("status IN ('queued', 'running', 'done', 'failed')", name=op.f("ck_similarity_runs_status")),
        sa.CheckConstraint("reason IN ('request', 'due')", name=op.f("ck_similarity_runs_reason")),
        sa.ForeignKeyConstraint(["course_id"], ["courses.id"], name=op.f("fk_similarity_runs_course_id_courses"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["requested_by"], ["users.id"], name=op.f("fk_similarity_runs_requested_by_users"), ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_similarity_runs")),
    )
    op.create_index("ix_similarity_runs_course_id_id", "similarity_runs", ["course_id", "id"])
    op.create_table(
        "similarity_pairs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("learner_a_id", sa.Integer(), nullable=False),
        sa.Column("learner_b_id", sa.Integer(), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("similar_on", sa.Integer(), nullable=False),
        sa.Column("exercises", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["similarity_runs.id"], name=op.f("fk_similarity_pairs_run_id_similarity_runs"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["learner_a_id"], ["users.id"], name=op.f("fk_similarity_pairs_learner_a_id_users"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["learner_b_id"], ["users.id"], name=op.f("fk_similarity_pairs_learner_b_id_users"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_similarity_pairs")),
    )
    op.create_index("ix_similarity_pairs_run_id_score", "similarity_pairs", ["run_id", "score"])
    op.create_table(
        "similarity_reviews",
        sa.Column("course_id", sa.Integer(), nullable=False),
        sa.Column("learner_a_id", sa.Integer(), nullable=False),
        sa.Column("learner_b_id", sa.Integer(), nullable=False),
        sa.Column("mark", sa.String(length=16), nullable=False),
        sa.Column("reviewer_id", sa.Integer(), nullable=True),
        sa.Column("reviewed_at", Timestamp, nullable=False),
        sa.CheckConstraint("mark IN ('fine', 'concern')", name=op.f("ck_similarity_reviews_mark")),
        sa.ForeignKeyConstraint(["course_id"], ["courses.id"], name=op.f("fk_similarity_reviews_course_id_courses"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["learner_a_id"], ["users.id"], name=op.f("fk_similarity_reviews_learner_a_id_users"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["learner_b_id"], ["users.id"], name=op.f("fk_similarity_reviews_learner_b_id_users"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["reviewer_id"], ["users.id"], name=op.f("fk_similarity_reviews_reviewer_id_users"), ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("course_id", "learner_a_id", "learner_b_id", name=op.f("pk_similarity_reviews")),
    )


def downgrade() -> None:
    """Drop them (runs, pairs and marks are lost; submissions and scores are untouched)."""
    op.drop_table("similarity_reviews")
    op.drop_index("ix_similarity_pairs_run_id_score", table_name="similarity_pairs")
    op.drop_table("similarity_pairs")
    op.drop_index("ix_similarity_runs_course_id_id", table_name="similarity_runs")
    op.drop_table("similarity_runs")
