"""submission feedback: the root causes, diagnosis and summary of a verdict, and the file name.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30

``feedback`` (nullable JSON) holds ``{"root_causes": [...], "diagnosis": [...], "summary": {...}}``
as built by ``exercises.feedback`` and stored with the verdict; rows graded before this
revision keep NULL and are shown from their per-check results alone. ``filename`` (nullable)
is the base name of the file the learner submitted, shown in tracebacks instead of the
jail's ``submission.py``.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the two nullable columns (no rewrite of existing rows)."""
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("feedback", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("filename", sa.String(length=128), nullable=True))


def downgrade() -> None:
    """Drop them."""
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("filename")
        batch.drop_column("feedback")
