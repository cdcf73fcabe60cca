"""LTI 1.3: platforms, the tool's keys, logins, linked users, courses, members, line items,
scores sent, deep-linking requests and launch tickets (``server/models/lti.py``, issue 35).

Revision ID: 0017
Revises: 0015
Create Date: 2026-12-01

New tables only: nothing existing changes, and the downgrade drops them.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Mirrors UTCDateTime's impl (migrations do not import model code).
Timestamp = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create the LTI tables."""
    op.create_table('lti_platforms',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('issuer', sa.String(length=2000), nullable=False),
    sa.Column('client_id', sa.String(length=255), nullable=False),
    sa.Column('auth_login_url', sa.String(length=2000), nullable=False),
    sa.Column('auth_token_url', sa.String(length=2000), nullable=False),
    sa.Column('jwks_url', sa.String(length=2000), nullable=False),
    sa.Column('jwks', sa.Text(), nullable=True),
    sa.Column('jwks_fetched_at', Timestamp, nullable=True),
    sa.Column('jwks_miss_at', Timestamp, nullable=True),
    sa.Column('created_at', Timestamp, nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_lti_platforms')),
    sa.UniqueConstraint('issuer', 'client_id', name=op.f('uq_lti_platforms_issuer_client_id'))
    )
    op.create_table('lti_tool_keys',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('kid', sa.String(length=128), nullable=False),
    sa.Column('private_key', sa.Text(), nullable=False),
    sa.Column('created_at', Timestamp, nullable=False),
    sa.Column('retired_at', Timestamp, nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_lti_tool_keys')),
    sa.UniqueConstraint('kid', name=op.f('uq_lti_tool_keys_kid'))
    )
    op.create_table('lti_contexts',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('platform_id', sa.Integer(), nullable=False),
    sa.Column('deployment_id', sa.String(length=255), nullable=False),
    sa.Column('context_id', sa.String(length=255), nullable=False),
    sa.Column('course_id', sa.Integer(), nullable=False),
    sa.Column('title', sa.String(length=200), nullable=False),
    sa.Column('memberships_url', sa.String(length=2000), nullable=True),
    sa.Column('lineitems_url', sa.String(length=2000), nullable=True),
    sa.Column('ags_scopes', sa.String(length=1000), nullable=False),
    sa.Column('auto_grades', sa.Boolean(), server_default=sa.false(), nullable=False),
    sa.Column('roster_synced_at', Timestamp, nullable=True),
    sa.Column('grades_synced_at', Timestamp, nullable=True),
    sa.Column('sync_error', sa.String(length=500), nullable=True),
    sa.Column('sync_failed_at', Timestamp, nullable=True),
    sa.Column('sync_attempts', sa.Integer(), server_default='0', nullable=False),
    sa.Column('next_sync_at', Timestamp, nullable=True),
    sa.Column('send_requested_at', Timestamp, nullable=True),
    sa.ForeignKeyConstraint(['course_id'], ['courses.id'], name=op.f('fk_lti_contexts_course_id_courses'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['platform_id'], ['lti_platforms.id'], name=op.f('fk_lti_contexts_platform_id_lti_platforms'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_lti_contexts')),
    sa.UniqueConstraint('course_id', name=op.f('uq_lti_contexts_course_id')),
    sa.UniqueConstraint('platform_id', 'deployment_id', 'context_id', name=op.f('uq_lti_contexts_platform_id_deployment_id_context_id'))
    )
    op.create_table('lti_deployments',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('platform_id', sa.Integer(), nullable=False),
    sa.Column('deployment_id', sa.String(length=255), nullable=False),
    sa.ForeignKeyConstraint(['platform_id'], ['lti_platforms.id'], name=op.f('fk_lti_deployments_platform_id_lti_platforms'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_lti_deployments')),
    sa.UniqueConstraint('platform_id', 'deployment_id', name=op.f('uq_lti_deployments_platform_id_deployment_id'))
    )
    op.create_table('lti_logins',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('state', sa.String(length=64), nullable=False),
    sa.Column('nonce', sa.String(length=64), nullable=False),
    sa.Column('platform_id', sa.Integer(), nullable=False),
    sa.Column('created_at', Timestamp, nullable=False),
    sa.Column('expires_at', Timestamp, nullable=False),
    sa.Column('used_at', Timestamp, nullable=True),
    sa.ForeignKeyConstraint(['platform_id'], ['lti_platforms.id'], name=op.f('fk_lti_logins_platform_id_lti_platforms'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_lti_logins')),
    sa.UniqueConstraint('nonce', name=op.f('uq_lti_logins_nonce')),
    sa.UniqueConstraint('state', name=op.f('uq_lti_logins_state'))
    )
    op.create_index("ix_lti_logins_expires_at", "lti_logins", ['expires_at'])

    op.create_table('lti_users',
    sa.Column('platform_id', sa.Integer(), nullable=False),
    sa.Column('sub', sa.String(length=255), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('email', sa.String(length=255), nullable=True),
    sa.ForeignKeyConstraint(['platform_id'], ['lti_platforms.id'], name=op.f('fk_lti_users_platform_id_lti_platforms'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_lti_users_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('platform_id', 'sub', name=op.f('pk_lti_users'))
    )
    op.create_index("ix_lti_users_user_id", "lti_users", ['user_id'])

    op.create_table('lti_deep_links',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('token', sa.String(length=64), nullable=False),
    sa.Column('context_id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('return_url', sa.String(length=2000), nullable=False),
    sa.Column('data', sa.String(length=2000), nullable=True),
    sa.Column('accept_multiple', sa.Boolean(), nullable=False),
    sa.Column('created_at', Timestamp, nullable=False),
    sa.Column('expires_at', Timestamp, nullable=False),
    sa.Column('used_at', Timestamp, nullable=True),
    sa.ForeignKeyConstraint(['context_id'], ['lti_contexts.id'], name=op.f('fk_lti_deep_links_context_id_lti_contexts'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_lti_deep_links_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_lti_deep_links')),
    sa.UniqueConstraint('token', name=op.f('uq_lti_deep_links_token'))
    )
    op.create_index("ix_lti_deep_links_expires_at", "lti_deep_links", ['expires_at'])

    op.create_table('lti_line_items',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('context_id', sa.Integer(), nullable=False),
    sa.Column('exercise', sa.String(length=64), nullable=False),
    sa.Column('url', sa.String(length=2000), nullable=False),
    sa.ForeignKeyConstraint(['context_id'], ['lti_contexts.id'], name=op.f('fk_lti_line_items_context_id_lti_contexts'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_lti_line_items')),
    sa.UniqueConstraint('context_id', 'exercise', name=op.f('uq_lti_line_items_context_id_exercise'))
    )
    op.create_table('lti_members',
    sa.Column('context_id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('roles', sa.String(length=1000), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('seen_at', Timestamp, nullable=False),
    sa.CheckConstraint("status IN ('active', 'dropped')", name=op.f('ck_lti_members_status')),
    sa.ForeignKeyConstraint(['context_id'], ['lti_contexts.id'], name=op.f('fk_lti_members_context_id_lti_contexts'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_lti_members_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('context_id', 'user_id', name=op.f('pk_lti_members'))
    )
    op.create_table('lti_scores_sent',
    sa.Column('context_id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('exercise', sa.String(length=64), nullable=False),
    sa.Column('score', sa.Float(), nullable=True),
    sa.Column('excused', sa.Boolean(), nullable=False),
    sa.Column('submitted_at', Timestamp, nullable=True),
    sa.Column('sent_at', Timestamp, nullable=False),
    sa.ForeignKeyConstraint(['context_id'], ['lti_contexts.id'], name=op.f('fk_lti_scores_sent_context_id_lti_contexts'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_lti_scores_sent_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('context_id', 'user_id', 'exercise', name=op.f('pk_lti_scores_sent'))
    )
    op.create_table('lti_tickets',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('token', sa.String(length=64), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('api_token_id', sa.Integer(), nullable=False),
    sa.Column('destination', sa.String(length=2000), nullable=False),
    sa.Column('expires_at', Timestamp, nullable=False),
    sa.Column('used_at', Timestamp, nullable=True),
    sa.ForeignKeyConstraint(['api_token_id'], ['api_tokens.id'], name=op.f('fk_lti_tickets_api_token_id_api_tokens'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_lti_tickets_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_lti_tickets')),
    sa.UniqueConstraint('token', name=op.f('uq_lti_tickets_token'))
    )
    op.create_index("ix_lti_tickets_expires_at", "lti_tickets", ['expires_at'])



def downgrade() -> None:
    """Drop them (LMS links, sent-score records and the tool's keys are forgotten)."""
    op.drop_index("ix_lti_tickets_expires_at", table_name="lti_tickets")

    op.drop_table('lti_tickets')
    op.drop_table('lti_scores_sent')
    op.drop_table('lti_members')
    op.drop_table('lti_line_items')
    op.drop_index("ix_lti_deep_links_expires_at", table_name="lti_deep_links")

    op.drop_table('lti_deep_links')
    op.drop_index("ix_lti_users_user_id", table_name="lti_users")

    op.drop_table('lti_users')
    op.drop_index("ix_lti_logins_expires_at", table_name="lti_logins")

    op.drop_table('lti_logins')
    op.drop_table('lti_deployments')
    op.drop_table('lti_contexts')
    op.drop_table('lti_tool_keys')
    op.drop_table('lti_platforms')
