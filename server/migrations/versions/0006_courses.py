"""Courses: courses, enrollments, exercise sets, extensions; submissions and best_scores per course.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30

An upgraded server loses nothing and behaves as before: one course, ``default`` (id 1), is
created; every existing submission is put in it with its raw score as the score that counts
(nothing was late before courses existed); ``best_scores`` is rebuilt per course from the
submissions with the same rules (plain SQL frozen here, like 0004's). The default course
has no exercise set, so every catalogue exercise stays open in it without dates.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Mirrors UTCDateTime's impl (migrations do not import model code).
Timestamp = sa.DateTime(timezone=True)

_BACKFILL = """
INSERT INTO best_scores (course_id, user_id, exercise, best_score, attempts, best_reached_at, best_submission_id,
                         counted_score, counted_reached_at, counted_submission_id, solved_at)
SELECT p.course_id, p.user_id, p.exercise, p.best, p.attempts,
  (SELECT MIN(s.created_at) FROM submissions s
    WHERE s.course_id = p.course_id AND s.user_id = p.user_id AND s.exercise = p.exercise
      AND s.verdict = 'graded' AND s.score = p.best),
  (SELECT s.id FROM submissions s
    WHERE s.course_id = p.course_id AND s.user_id = p.user_id AND s.exercise = p.exercise
      AND s.verdict = 'graded' AND s.score = p.best
    ORDER BY s.created_at, s.id LIMIT 1),
  p.best,
  (SELECT MIN(s.created_at) FROM submissions s
    WHERE s.course_id = p.course_id AND s.user_id = p.user_id AND s.exercise = p.exercise
      AND s.verdict = 'graded' AND s.score = p.best),
  (SELECT s.id FROM submissions s
    WHERE s.course_id = p.course_id AND s.user_id = p.user_id AND s.exercise = p.exercise
      AND s.verdict = 'graded' AND s.score = p.best
    ORDER BY s.created_at, s.id LIMIT 1),
  p.solved_at
FROM (
  SELECT course_id, user_id, exercise,
    MAX(CASE WHEN verdict = 'graded' THEN score END) AS best,
    COUNT(*) AS attempts,
    MIN(CASE WHEN verdict = 'graded' AND score >= 100 THEN created_at END) AS solved_at
  FROM submissions
  WHERE verdict IS NOT NULL AND verdict <> 'internal_error'
  GROUP BY course_id, user_id, exercise
) p
"""


def upgrade() -> None:
    """Create the course tables and the default course, then attach submissions and boards."""
    op.create_table(
        "courses",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("slug", sa.String(length=64), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("time_zone", sa.String(length=64), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_courses"),
        sa.UniqueConstraint("slug", name="uq_courses_slug"),
    )
    op.execute(
        "INSERT INTO courses (id, slug, title, time_zone, created_at) "
        "VALUES (1, 'default', 'Default course', 'UTC', CURRENT_TIMESTAMP)"
    )
    if op.get_bind().dialect.name == "postgresql":  # the explicit id 1 must not collide later
        op.execute("SELECT setval(pg_get_serial_sequence('courses', 'id'), 1)")
    op.create_table(
        "enrollments",
        sa.Column("course_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.CheckConstraint("role IN ('learner', 'instructor')", name="ck_enrollments_role"),
        sa.ForeignKeyConstraint(["course_id"], ["courses.id"], name="fk_enrollments_course_id_courses", ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name="fk_enrollments_user_id_users", ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("course_id", "user_id", name="pk_enrollments"),
    )
    op.create_index("ix_enrollments_user_id", "enrollments", ["user_id"])
    op.create_table(
        "set_entries",
        sa.Column("course_id", sa.Integer(), nullable=False),
        sa.Column("exercise", sa.String(length=64), nullable=False),
        sa.Column("release_at", Timestamp, nullable=True),
        sa.Column("due_at", Timestamp, nullable=True),
        sa.Column("close_at", Timestamp, nullable=True),
        sa.Column("penalty_percent", sa.Float(), nullable=False),
        sa.Column("penalty_unit", sa.String(length=8), nullable=False),
        sa.Column("max_attempts", sa.Integer(), nullable=True),
        sa.CheckConstraint("penalty_unit IN ('day', 'hour')", name="ck_set_entries_penalty_unit"),
        sa.CheckConstraint("penalty_percent >= 0 AND penalty_percent <= 100", name="ck_set_entries_penalty_percent"),
        sa.ForeignKeyConstraint(["course_id"], ["courses.id"], name="fk_set_entries_course_id_courses", ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("course_id", "exercise", name="pk_set_entries"),
    )
    op.create_table(
        "extensions",
        sa.Column("course_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("exercise", sa.String(length=64), nullable=False),
        sa.Column("due_at", Timestamp, nullable=False),
        sa.Column("granted_at", Timestamp, nullable=False),
        sa.ForeignKeyConstraint(["course_id"], ["courses.id"], name="fk_extensions_course_id_courses", ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name="fk_extensions_user_id_users", ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("course_id", "user_id", "exercise", name="pk_extensions"),
    )

    # Every existing submission belongs to the default course; nothing was late before.
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("course_id", sa.Integer(), nullable=False, server_default="1"))
        batch.add_column(sa.Column("late_seconds", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("penalty_percent", sa.Float(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("counted_score", sa.Float(), nullable=True))
        batch.create_foreign_key(
            "fk_submissions_course_id_courses", "courses", ["course_id"], ["id"], ondelete="CASCADE"
        )
        batch.create_index("ix_submissions_course_id_user_id_exercise", ["course_id", "user_id", "exercise"])
    op.execute("UPDATE submissions SET counted_score = score WHERE verdict = 'graded'")
    # The boards' covering index (0002) now leads with the course they filter on.
    op.drop_index("ix_submissions_exercise_user_id_verdict_score_created_at", table_name="submissions")
    op.create_index(
        "ix_submissions_course_id_exercise_user_id_covering",
        "submissions",
        ["course_id", "exercise", "user_id", "verdict", "score", "created_at"],
    )

    # best_scores gains the course in its key and the score that counts: rebuilt from the
    # submissions (the same rules that filled it in 0004, now per course).
    op.drop_table("best_scores")
    op.create_table(
        "best_scores",
        sa.Column("course_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("exercise", sa.String(length=64), nullable=False),
        sa.Column("best_score", sa.Float(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("best_reached_at", Timestamp, nullable=True),
        sa.Column("best_submission_id", sa.Integer(), nullable=True),
        sa.Column("counted_score", sa.Float(), nullable=True),
        sa.Column("counted_reached_at", Timestamp, nullable=True),
        sa.Column("counted_submission_id", sa.Integer(), nullable=True),
        sa.Column("solved_at", Timestamp, nullable=True),
        sa.ForeignKeyConstraint(["course_id"], ["courses.id"], name="fk_best_scores_course_id_courses", ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name="fk_best_scores_user_id_users", ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["best_submission_id"], ["submissions.id"],
            name="fk_best_scores_best_submission_id_submissions", ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["counted_submission_id"], ["submissions.id"],
            name="fk_best_scores_counted_submission_id_submissions", ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("course_id", "user_id", "exercise", name="pk_best_scores"),
    )
    op.execute(sa.text(_BACKFILL))


def downgrade() -> None:
    """Back to 0004: one board for everyone (rows of other courses fold into it)."""
    op.drop_table("best_scores")
    op.create_table(
        "best_scores",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("exercise", sa.String(length=64), nullable=False),
        sa.Column("best_score", sa.Float(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("best_reached_at", Timestamp, nullable=True),
        sa.Column("best_submission_id", sa.Integer(), nullable=True),
        sa.Column("solved_at", Timestamp, nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name="fk_best_scores_user_id_users", ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["best_submission_id"], ["submissions.id"],
            name="fk_best_scores_best_submission_id_submissions", ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("user_id", "exercise", name="pk_best_scores"),
    )
    op.drop_index("ix_submissions_course_id_exercise_user_id_covering", table_name="submissions")
    with op.batch_alter_table("submissions") as batch:
        batch.drop_index("ix_submissions_course_id_user_id_exercise")
        batch.drop_constraint("fk_submissions_course_id_courses", type_="foreignkey")
        for column in ("counted_score", "penalty_percent", "late_seconds", "course_id"):
            batch.drop_column(column)
    op.create_index(
        "ix_submissions_exercise_user_id_verdict_score_created_at",
        "submissions",
        ["exercise", "user_id", "verdict", "score", "created_at"],
    )
    op.drop_table("extensions")
    op.drop_table("set_entries")
    op.drop_index("ix_enrollments_user_id", table_name="enrollments")
    op.drop_table("enrollments")
    op.drop_table("courses")
