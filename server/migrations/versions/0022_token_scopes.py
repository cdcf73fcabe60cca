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
_CHECK = "ck_api_tokens_scope"
_FOREIGN_KEY = "fk_api_tokens_course_id_courses"


def upgrade() -> None:
    """Add ``scope`` (existing rows ``full``), ``course_id`` and ``label`` to ``api_tokens``."""
    # On SQLite a batch copy (its ADD COLUMN takes no named table constraint): safe for this
    # table, since env.py turns foreign keys off for migrations, so dropping the old table
    # cascades into no ``lti_tickets``. On PostgreSQL plain ALTERs.
    with op.batch_alter_table("api_tokens") as batch:
        batch.add_column(sa.Column("scope", sa.String(length=16), nullable=False, server_default="full"))
        batch.add_column(sa.Column("course_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("label", sa.String(length=64), nullable=True))
        batch.create_check_constraint(op.f(_CHECK), "scope IN ('full', 'read')")
        batch.create_foreign_key(op.f(_FOREIGN_KEY), "courses", ["course_id"], ["id"], ondelete="CASCADE")


def downgrade() -> None:
    """Revoke the narrowed tokens (they would come back unlimited), then drop the three columns."""
    op.execute(
        "UPDATE api_tokens SET revoked_at = CURRENT_TIMESTAMP "
        "WHERE revoked_at IS NULL AND (scope <> 'full' OR course_id IS NOT NULL)"
    )
    with op.batch_alter_table("api_tokens") as batch:  # a copy on SQLite, as in upgrade()
        batch.drop_constraint(op.f(_FOREIGN_KEY), type_="foreignkey")
        batch.drop_constraint(op.f(_CHECK), type_="check")
        for column in _COLUMNS:
            batch.drop_column(column)
