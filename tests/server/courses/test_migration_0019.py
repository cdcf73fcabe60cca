"""Migration 0019_ended_sessions on SQLite and PostgreSQL: existing submissions take their set
entry's feedback policy and due date (none where there is no entry), ``ended_sessions`` comes
and goes, no row is lost on the way up or down, and the way back up works."""

from __future__ import annotations

from datetime import UTC, datetime

from alembic import command
from sqlalchemy import inspect, text

from server.config import Settings
from server.db import make_engine
from server.migrations import alembic_config

_SUBMISSION = (
    "INSERT INTO submissions (id, user_id, course_id, exercise, source, source_sha256, status, verdict, score, "
    "penalty_percent, message, stdout, stderr, timings, attempts, content_version, grader_version, created_at) "
    "VALUES ({id}, 5, {course}, '{exercise}', 'x', 'y', 'done', 'graded', 50, 0, '', '', '', '{{}}', 1, "
    "'unknown', 'unknown', '2026-01-01')"
)


def test_submissions_take_their_sets_policy_and_nothing_is_lost_up_or_down(settings: Settings) -> None:
    engine = make_engine(settings.DATABASE_URL)
    command.upgrade(alembic_config(engine), "0018_exercise_versions")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO users (id, name, display_name, role, created_at) VALUES (5, 'ann', 'Ann', 'learner', '2026-01-01')"))
        conn.execute(text("INSERT INTO courses (id, slug, title, time_zone, created_at) VALUES (7, 'exam', 'Exam', 'UTC', '2026-01-01')"))
        conn.execute(text(
            "INSERT INTO set_entries (course_id, exercise, due_at, penalty_percent, penalty_unit, feedback_policy) "
            "VALUES (7, 'gae', '2026-02-01 12:00:00+00:00', 0, 'day', 'hidden-until-due')"))
        conn.execute(text(_SUBMISSION.format(id=1, course=7, exercise="gae")))  # in the exam's set
        conn.execute(text(_SUBMISSION.format(id=2, course=7, exercise="whiten")))  # its entry deleted before
        conn.execute(text(_SUBMISSION.format(id=3, course=1, exercise="gae")))  # the default course's open one
    command.upgrade(alembic_config(engine), "0019_ended_sessions")
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT id, feedback_policy, feedback_due_at FROM submissions ORDER BY id")).all()
        due = rows[0][2]
        due = datetime.fromisoformat(due) if isinstance(due, str) else due
        assert (rows[0][1], due.replace(tzinfo=due.tzinfo or UTC)) == ("hidden-until-due", datetime(2026, 2, 1, 12, tzinfo=UTC))
        assert [r[1:] for r in rows[1:]] == [(None, None), (None, None)]
        assert conn.execute(text("SELECT count(*) FROM ended_sessions")).scalar() == 0
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO ended_sessions (nonce, expires_at) VALUES ('n1', '2026-01-02 00:00:00+00:00')"))
    command.downgrade(alembic_config(engine), "0018_exercise_versions")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT id, score FROM submissions ORDER BY id")).all() == [(1, 50.0), (2, 50.0), (3, 50.0)]
        assert conn.execute(text("SELECT feedback_policy FROM set_entries")).all() == [("hidden-until-due",)]
    assert "ended_sessions" not in inspect(engine).get_table_names()
    command.upgrade(alembic_config(engine), "head")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM submissions WHERE feedback_policy = 'hidden-until-due'")).scalar() == 1
    engine.dispose()
