"""lti_deep_links.deployment_id: the installation a deep-linking request came from.

Revision ID: 0024_lti_round6
Revises: 0022_token_scopes
Create Date: 2026-12-04

An LMS course launched from two installations of the tool (two deployment ids of one
platform: Canvas's account and sub-account installations) is one course here
(``server.lti.accounts.linked_context``), its link made by the first installation. A
deep-linking answer must name the deployment of the request it answers, which may be the
other installation's: each request keeps its own (null for requests made before this
revision: the link's, as before). Downgrade drops the column.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024_lti_round6"
down_revision: str | None = "0022_token_scopes"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the nullable ``deployment_id``."""
    with op.batch_alter_table("lti_deep_links") as batch:
        batch.add_column(sa.Column("deployment_id", sa.String(length=255), nullable=True))


def downgrade() -> None:
    """Drop it (answers name the link's deployment again)."""
    with op.batch_alter_table("lti_deep_links") as batch:
        batch.drop_column("deployment_id")
