"""token scopes: an API token may be read-only, limited to one course, and labelled (issue 36).

Revision ID: 0022_token_scopes
Revises: 0020_check_self_reported
Create Date: 2026-12-04

``api_tokens.scope`` (``full`` or ``read``, a check constraint like ``users.role``): every
existing token is ``full``, so it does what it did. ``api_tokens.course_id`` (NULL: every
course its owner may reach; deleting the course deletes the token, never widens it) and
``api_tokens.label`` (what its owner calls it) start NULL. The downgrade drops the three: every
token is then full and unlimited again, so it first revokes the narrowed ones (a read-only
token must not come back as a full one).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022_token_scopes"
down_revision: str | None = "0020_check_self_reported"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COLUMNS = ("label", "course_id", "scope")


def upgrade() -> None:
    """Add ``scope`` (existing rows ``full``), ``course_id`` and ``label`` to ``api_tokens``."""
    # In place, never a batch copy (on SQLite a copy drops the table, and foreign keys cascade):
    # SQLite's ADD COLUMN takes a column's CHECK and REFERENCES, so the columns carry them.
    op.add_column(
        "api_tokens",
        sa.Column(
            "scope",
            sa.String(length=16),
            sa.CheckConstraint("scope IN ('full', 'read')", name=op.f("ck_api_tokens_scope")),
            nullable=False,
            server_default="full",
        ),
    )
    if op.get_bind().dialect.name == "sqlite":  # Alembic would ALTER the foreign key apart: refused
        op.execute(
            "ALTER TABLE api_tokens ADD COLUMN course_id INTEGER CONSTRAINT fk_api_tokens_course_id_courses "
            "REFERENCES courses (id) ON DELETE CASCADE"
        )
    else:
        op.add_column(
            "api_tokens",
            sa.Column(
                "course_id",
                sa.Integer(),
                sa.ForeignKey("courses.id", name=op.f("fk_api_tokens_course_id_courses"), ondelete="CASCADE"),
                nullable=True,
            ),
        )
    op.add_column("api_tokens", sa.Column("label", sa.String(length=64), nullable=True))


def downgrade() -> None:
    """Revoke the narrowed tokens (they would come back unlimited), then drop the three columns."""
    op.execute(
        "UPDATE api_tokens SET revoked_at = CURRENT_TIMESTAMP "
        "WHERE revoked_at IS NULL AND (scope <> 'full' OR course_id IS NOT NULL)"
    )
    if op.get_bind().dialect.name != "sqlite":
        for column in _COLUMNS:
            op.drop_column("api_tokens", column)
        return
    # SQLite drops no foreign-key column in place: one batch copy drops the three (safe here:
    # env.py turns foreign keys off for migrations, so dropping the old table cascades into no
    # ``lti_tickets``); the copy keeps ``scope``'s check as a table constraint, dropped with it.
    with op.batch_alter_table("api_tokens") as batch:
        batch.drop_constraint(op.f("ck_api_tokens_scope"), type_="check")
        for column in _COLUMNS:
            batch.drop_column(column)
