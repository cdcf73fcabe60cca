"""packs: the exercise gate's results, by content version (issue 23).

Revision ID: 0014
Revises: 0010
Create Date: 2026-12-01

One new table, nothing existing is touched (see ``server/models/verification.py``).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Mirrors UTCDateTime's impl (migrations do not import model code).
Timestamp = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create exercise_verifications."""
    op.create_table(
        "exercise_verifications",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("exercise", sa.String(length=64), nullable=False),
        sa.Column("content_version", sa.String(length=16), nullable=False),
        sa.Column("grader_version", sa.String(length=16), nullable=False),
        sa.Column("pack", sa.String(length=512), nullable=False),
        sa.Column("passed", sa.Boolean(), nullable=False),
        sa.Column("verified_at", Timestamp, nullable=False),
        sa.Column("summary", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_exercise_verifications")),
    )
    op.create_index("ix_exercise_verifications_exercise_content_version", "exercise_verifications",
                    ["exercise", "content_version"])


def downgrade() -> None:
    """Drop it (the record of past verifications is lost; publishing a pack exercise needs a new verify)."""
    op.drop_index("ix_exercise_verifications_exercise_content_version", table_name="exercise_verifications")
    op.drop_table("exercise_verifications")
