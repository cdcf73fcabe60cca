"""LTI: a line item's claim is a column, a platform's last service failure, the LMS page's tasks.

Revision ID: 0026_lti_claimed_at
Revises: 0023_mistake_title
Create Date: 2026-12-04

- ``lti_line_items.claimed_at`` (nullable): when a job claimed the creation of the column at
  the LMS; ``url`` becomes nullable (None: no column known yet). Before, the claim was text in
  ``url`` (``claimed:<iso time>``) and a column a deep-linking answer asked for was ``''``:
  each such row is converted (a claim keeps its time, one whose time cannot be read becomes
  a claim from 1970, stale at once, as the old code read it; ``''`` becomes None).
- ``lti_platforms.failed_service``, ``failed_at``, ``failure``: the last failed call to the
  platform's token or key set URL, shown to instructors and admins.
- ``lti_tasks``: the LMS page's roster and comparison requests, run by the background job.

Downgrade writes the claims back as text and drops the rest.
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0026_lti_claimed_at"
down_revision: str | None = "0023_mistake_title"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Mirrors UTCDateTime's impl (migrations do not import model code).
Timestamp = sa.DateTime(timezone=True)
CLAIMED = "claimed:"
#: An old claim whose time cannot be read: as the old code did, stale at once.
_UNREADABLE = datetime(1970, 1, 1, tzinfo=UTC)


def _items() -> sa.TableClause:
    return sa.table(
        "lti_line_items",
        sa.column("id", sa.Integer()),
        sa.column("url", sa.String(2000)),
        sa.column("claimed_at", Timestamp),
    )


def _claim_time(text: str) -> datetime:
    try:
        when = datetime.fromisoformat(text.removeprefix(CLAIMED))
    except ValueError:
        return _UNREADABLE
    return when.astimezone(UTC) if when.tzinfo is not None else _UNREADABLE


def upgrade() -> None:
    """Add the columns and the table; convert the stored claims."""
    with op.batch_alter_table("lti_line_items") as batch:
        batch.add_column(sa.Column("claimed_at", Timestamp, nullable=True))
        batch.alter_column("url", existing_type=sa.String(length=2000), nullable=True)
    items = _items()
    bind = op.get_bind()
    rows = bind.execute(
        sa.select(items.c.id, items.c.url).where(sa.or_(items.c.url == "", items.c.url.like(f"{CLAIMED}%")))
    ).all()
    for row_id, url in rows:
        claimed = _claim_time(url) if url.startswith(CLAIMED) else None
        bind.execute(items.update().where(items.c.id == row_id).values(url=None, claimed_at=claimed))
    with op.batch_alter_table("lti_platforms") as batch:
        batch.add_column(sa.Column("failed_service", sa.String(length=16), nullable=True))
        batch.add_column(sa.Column("failed_at", Timestamp, nullable=True))
        batch.add_column(sa.Column("failure", sa.String(length=500), nullable=True))
    op.create_table(
        "lti_tasks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("context_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("requested_at", Timestamp, nullable=False),
        sa.Column("started_at", Timestamp, nullable=True),
        sa.Column("finished_at", Timestamp, nullable=True),
        sa.Column("outcome", sa.String(length=500), nullable=True),
        sa.Column("lms_results", sa.Text(), nullable=True),
        sa.CheckConstraint("kind IN ('roster', 'compare')", name=op.f("ck_lti_tasks_kind")),
        sa.CheckConstraint("state IN ('queued', 'running', 'done', 'failed')", name=op.f("ck_lti_tasks_state")),
        sa.ForeignKeyConstraint(
            ["context_id"], ["lti_contexts.id"], name=op.f("fk_lti_tasks_context_id_lti_contexts"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lti_tasks")),
        sa.UniqueConstraint("context_id", "kind", name=op.f("uq_lti_tasks_context_id_kind")),
    )


def downgrade() -> None:
    """Claims back into ``url`` as text, the rest dropped."""
    op.drop_table("lti_tasks")
    with op.batch_alter_table("lti_platforms") as batch:
        batch.drop_column("failure")
        batch.drop_column("failed_at")
        batch.drop_column("failed_service")
    items = _items()
    bind = op.get_bind()
    for row_id, claimed in bind.execute(sa.select(items.c.id, items.c.claimed_at).where(items.c.url.is_(None))).all():
        if claimed is not None and claimed.tzinfo is None:
            claimed = claimed.replace(tzinfo=UTC)  # SQLite gives the UTC time back without its offset
        text = f"{CLAIMED}{claimed.astimezone(UTC).isoformat()}" if claimed is not None else ""
        bind.execute(items.update().where(items.c.id == row_id).values(url=text))
    with op.batch_alter_table("lti_line_items") as batch:
        batch.alter_column("url", existing_type=sa.String(length=2000), nullable=False)
        batch.drop_column("claimed_at")
