"""served versions: the stored, verified version of each pack exercise that grades wherever no
set pins one (the default course's open exercises, sets published before 0018), issue 32.

Revision ID: 0021_version_served
Revises: 0019_ended_sessions
Create Date: 2026-12-02

A new table only: empty after the upgrade, so the next ``serve`` records (and verifies) the
version each pack folder holds as it sees it first; the downgrade drops it.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021_version_served"
down_revision: str | None = "0019_ended_sessions"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Mirrors UTCDateTime's impl (migrations do not import model code).
Timestamp = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create ``served_versions``."""
    op.create_table(
        "served_versions",
        sa.Column("exercise", sa.String(length=64), nullable=False),
        sa.Column("content_version", sa.String(length=16), nullable=False),
        sa.Column("recorded_at", Timestamp, nullable=False),
        sa.ForeignKeyConstraint(
            ["exercise", "content_version"],
            ["exercise_versions.exercise", "exercise_versions.content_version"],
            name=op.f("fk_served_versions_exercise_exercise_versions"),
        ),
        sa.PrimaryKeyConstraint("exercise", name=op.f("pk_served_versions")),
    )


def downgrade() -> None:
    """Drop it (unpinned sets would grade with the loaded catalogue again)."""
    op.drop_table("served_versions")
