"""course truth: hand corrections of the score that counts; per-course board names.

Revision ID: 0012
Revises: 0010
Create Date: 2026-12-01

- ``score_corrections``: overrides and excuses, never deleted (``server/models/correction.py``);
- ``courses.board_real_names``: learners see pseudonyms on a course's boards unless its
  instructor turns this on (existing courses start private, as new ones do).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Mirrors UTCDateTime's impl (migrations do not import model code).
Timestamp = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create ``score_corrections`` and add ``courses.board_real_names``."""
    op.create_table(
        "score_corrections",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("course_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("exercise", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("reason", sa.String(length=500), nullable=False),
        sa.Column("made_by", sa.String(length=128), nullable=False),
        sa.Column("made_at", Timestamp, nullable=False),
        sa.Column("revoked_by", sa.String(length=128), nullable=True),
        sa.Column("revoked_at", Timestamp, nullable=True),
        sa.CheckConstraint("kind IN ('override', 'excuse')", name=op.f("ck_score_corrections_kind")),
        sa.CheckConstraint("score IS NULL OR (score >= 0 AND score <= 100)", name=op.f("ck_score_corrections_score")),
        sa.ForeignKeyConstraint(["course_id"], ["courses.id"], name=op.f("fk_score_corrections_course_id_courses"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_score_corrections_user_id_users"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_score_corrections")),
    )
    op.create_index("ix_score_corrections_course_id_user_id_exercise", "score_corrections",
                    ["course_id", "user_id", "exercise"])
    # In place, never a batch copy: on SQLite a copy drops ``courses``, and with foreign keys on
    # that cascades to every submission, enrollment and set of every course.
    op.add_column("courses", sa.Column("board_real_names", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    """Drop them again."""
    if op.get_bind().dialect.name == "sqlite":  # in place (SQLite 3.35+), as in upgrade()
        op.execute("ALTER TABLE courses DROP COLUMN board_real_names")
    else:
        op.drop_column("courses", "board_real_names")
    op.drop_index("ix_score_corrections_course_id_user_id_exercise", table_name="score_corrections")
    op.drop_table("score_corrections")
