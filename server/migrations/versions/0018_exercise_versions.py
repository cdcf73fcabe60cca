"""exercise versions: verified versions stored whole, the version each set grades with, and
the service's settings (its pack folders) in the database (issue 32).

Revision ID: 0018_exercise_versions
Revises: 0017
Create Date: 2026-12-02

New tables and one nullable column: existing sets keep grading as before (NULL: the loaded
catalogue) until an exercise is published again; the downgrade drops them.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018_exercise_versions"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Mirrors UTCDateTime's impl (migrations do not import model code).
Timestamp = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create the tables and add ``set_entries.content_version``."""
    op.create_table(
        "exercise_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("exercise", sa.String(length=64), nullable=False),
        sa.Column("content_version", sa.String(length=16), nullable=False),
        sa.Column("pack", sa.String(length=512), nullable=False),
        sa.Column("folder", sa.String(length=255), nullable=False),
        sa.Column("files", sa.JSON(), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_exercise_versions")),
        sa.UniqueConstraint("exercise", "content_version", name=op.f("uq_exercise_versions_exercise_content_version")),
    )
    op.create_table(
        "service_settings",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("value", sa.JSON(), nullable=True),
        sa.Column("updated_at", Timestamp, nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_service_settings")),
    )
    # In place, never a batch copy (on SQLite a copy drops the table, and foreign keys cascade).
    op.add_column("set_entries", sa.Column("content_version", sa.String(length=16), nullable=True))


def downgrade() -> None:
    """Drop them (sets grade with the loaded catalogue again)."""
    if op.get_bind().dialect.name == "sqlite":  # in place (SQLite 3.35+), as in upgrade()
        op.execute("ALTER TABLE set_entries DROP COLUMN content_version")
    else:
        op.drop_column("set_entries", "content_version")
    op.drop_table("service_settings")
    op.drop_table("exercise_versions")
