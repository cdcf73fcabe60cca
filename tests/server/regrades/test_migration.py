"""Migration 0013 on SQLite and PostgreSQL: verdicts stored before it read "unknown" (so they
are stale), no row is lost on the way up or down, and the way back up works."""

from __future__ import annotations

from alembic import command
from sqlalchemy import text

from server.config import Settings
from server.db import make_engine
from server.migrations import alembic_config


def test_old_verdicts_become_unknown_and_nothing_is_lost_up_or_down(settings: Settings) -> None:
    engine = make_engine(settings.DATABASE_URL)
    command.upgrade(alembic_config(engine), "0012")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO users (id, name, display_name, role, created_at) VALUES (5, 'ann', 'Ann', 'learner', '2026-01-01')"))
        conn.execute(text(
            "INSERT INTO submissions (id, user_id, course_id, exercise, source, source_sha256, status, verdict, score, "
            "penalty_percent, message, stdout, stderr, timings, attempts, created_at) "
            "VALUES (1, 5, 1, 'gae', 'x', 'y', 'done', 'graded', 50, 0, '', '', '', '{}', 1, '2026-01-01')"))
        conn.execute(text("INSERT INTO check_results (submission_id, name, weight, passed, message, position) VALUES (1, 'c', 10, true, '', 0)"))
    command.upgrade(alembic_config(engine), "0013")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT content_version, grader_version, score FROM submissions")).all() == [("unknown", "unknown", 50.0)]
        assert conn.execute(text("SELECT count(*) FROM check_results")).scalar() == 1
    command.downgrade(alembic_config(engine), "0012")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT id, score FROM submissions")).all() == [(1, 50.0)]
        assert conn.execute(text("SELECT count(*) FROM check_results")).scalar() == 1
    command.upgrade(alembic_config(engine), "head")
    engine.dispose()
