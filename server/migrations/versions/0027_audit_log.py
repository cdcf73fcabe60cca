"""audit_events: every staff action, who, in which course, on what, when (issue 36); and who
granted an extension, and why.

Revision ID: 0027_audit_log
Revises: 0026_lti_claimed_at
Create Date: 2026-12-04

``audit_events``: one row per staff action (``server.models.audit``), added by the domain
services and never changed; the course page lists a course's newest first (the index on
``course_id, id``). ``action`` is held to the closed list by a check constraint.

``extensions.granted_by`` and ``extensions.reason``: the extension overview's who and why.
Extensions granted before this revision have neither (NULL: the page says "not recorded").
Both added in place, never a batch copy (on SQLite a copy drops the table, and foreign keys
cascade). The downgrade drops the columns and the table.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0027_audit_log"
down_revision: str | None = "0026_lti_claimed_at"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Mirrors UTCDateTime's impl (migrations do not import model code).
Timestamp = sa.DateTime(timezone=True)

#: The closed list as of this revision (``server.models.audit.AuditAction``).
_ACTIONS = (
    "extension.grant",
    "extension.remove",
    "score.override",
    "score.excuse",
    "score.undo-override",
    "score.undo-excuse",
    "set.publish",
    "set.edit",
    "set.unpublish",
    "scores.release",
    "scores.hold",
    "regrade.apply",
    "regrade.cancel",
    "staff.add",
    "staff.remove",
    "bulk.import",
)


def upgrade() -> None:
    """Create ``audit_events`` and its index; add the two extension columns."""
    listed = ", ".join(f"'{a}'" for a in _ACTIONS)
    op.create_table(
        "audit_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("course_id", sa.Integer(), nullable=True),
        sa.Column("actor_id", sa.Integer(), nullable=True),
        sa.Column("actor", sa.String(length=128), nullable=False),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("target", sa.String(length=160), nullable=False),
        sa.Column("detail", sa.String(length=300), nullable=False),
        sa.Column("at", Timestamp, nullable=False),
        sa.CheckConstraint(f"action IN ({listed})", name=op.f("ck_audit_events_action")),
        sa.ForeignKeyConstraint(
            ["course_id"], ["courses.id"], name=op.f("fk_audit_events_course_id_courses"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["actor_id"], ["users.id"], name=op.f("fk_audit_events_actor_id_users"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_events")),
    )
    op.create_index("ix_audit_events_course_id_id", "audit_events", ["course_id", "id"])
    op.add_column("extensions", sa.Column("granted_by", sa.String(length=128), nullable=True))
    op.add_column("extensions", sa.Column("reason", sa.String(length=500), nullable=True))


def downgrade() -> None:
    """Drop the extension columns (in place), the index and the table."""
    for column in ("reason", "granted_by"):
        if op.get_bind().dialect.name == "sqlite":  # in place (SQLite 3.35+), as in upgrade()
            op.execute(f"ALTER TABLE extensions DROP COLUMN {column}")
        else:
            op.drop_column("extensions", column)
    op.drop_index("ix_audit_events_course_id_id", table_name="audit_events")
    op.drop_table("audit_events")
