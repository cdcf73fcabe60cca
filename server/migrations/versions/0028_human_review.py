"""Human review: staff comments on a submission's lines, learners' review requests (issue 36).

Revision ID: 0028_human_review
Revises: 0027_audit_log
Create Date: 2026-12-06

``review_comments``: one staff comment on one line of a submission (``server.models.review``),
never changed. ``review_requests``: a learner's request for a review and its answer; the partial
unique index on ``submission_id`` where ``state = 'open'`` holds one open request per submission
in the database (both SQLite and PostgreSQL have partial indexes).

``audit_events.action``'s closed list gains ``review.comment`` and ``review.answer``. The check
constraint is replaced: on SQLite by a batch copy of ``audit_events``, which is safe because no
table references it (env.py turns foreign keys off around the copy); on PostgreSQL in place.
The downgrade drops both tables and puts the old list back (the events of the two new actions
are deleted first, or the old constraint would refuse the table).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0028_human_review"
down_revision: str | None = "0027_audit_log"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Mirrors UTCDateTime's impl (migrations do not import model code).
Timestamp = sa.DateTime(timezone=True)

#: The closed list as of 0027 (``server.models.audit.AuditAction``)...
_BEFORE = (
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
#: ...and as of this revision.
_NEW = ("review.comment", "review.answer")
_CHECK = "ck_audit_events_action"


def _listed(actions: Sequence[str]) -> str:
    return "action IN (" + ", ".join(f"'{a}'" for a in actions) + ")"


def _replace_check(actions: Sequence[str]) -> None:
    with op.batch_alter_table("audit_events") as batch:  # a copy on SQLite, in place on PostgreSQL
        batch.drop_constraint(op.f(_CHECK), type_="check")
        batch.create_check_constraint(op.f(_CHECK), _listed(actions))


def upgrade() -> None:
    """Create the two tables and their indexes; widen the audit log's closed list."""
    op.create_table(
        "review_comments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("course_id", sa.Integer(), nullable=False),
        sa.Column("line", sa.Integer(), nullable=False),
        sa.Column("body", sa.String(length=2000), nullable=False),
        sa.Column("author", sa.String(length=128), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.CheckConstraint("line >= 1", name=op.f("ck_review_comments_line")),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_review_comments_submission_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["course_id"], ["courses.id"], name=op.f("fk_review_comments_course_id_courses"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_review_comments")),
    )
    op.create_index("ix_review_comments_submission_id_id", "review_comments", ["submission_id", "id"])
    op.create_table(
        "review_requests",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("course_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("message", sa.String(length=1000), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.Column("answer", sa.String(length=2000), nullable=True),
        sa.Column("answered_by", sa.String(length=128), nullable=True),
        sa.Column("answered_at", Timestamp, nullable=True),
        sa.Column("correction_id", sa.Integer(), nullable=True),
        sa.CheckConstraint("state IN ('open', 'resolved')", name=op.f("ck_review_requests_state")),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_review_requests_submission_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["course_id"], ["courses.id"], name=op.f("fk_review_requests_course_id_courses"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_review_requests_user_id_users"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["correction_id"],
            ["score_corrections.id"],
            name=op.f("fk_review_requests_correction_id_score_corrections"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_review_requests")),
    )
    op.create_index(
        "ix_review_requests_open_submission",
        "review_requests",
        ["submission_id"],
        unique=True,
        sqlite_where=sa.text("state = 'open'"),
        postgresql_where=sa.text("state = 'open'"),
    )
    op.create_index("ix_review_requests_course_id_state_id", "review_requests", ["course_id", "state", "id"])
    _replace_check(_BEFORE + _NEW)


def downgrade() -> None:
    """Put the old closed list back (the new actions' events deleted first); drop the tables."""
    listed = ", ".join(f"'{a}'" for a in _NEW)
    op.execute(f"DELETE FROM audit_events WHERE action IN ({listed})")
    _replace_check(_BEFORE)
    op.drop_index("ix_review_requests_course_id_state_id", table_name="review_requests")
    op.drop_index("ix_review_requests_open_submission", table_name="review_requests")
    op.drop_table("review_requests")
    op.drop_index("ix_review_comments_submission_id_id", table_name="review_comments")
    op.drop_table("review_comments")
