"""Migration 0012 (corrections, per-course board names) up and down keeps every submission:
SQLite re-creating ``courses`` in a batch would cascade-delete them, so it must not."""

from __future__ import annotations

from alembic import command
from sqlalchemy import inspect, text

from server.config import Settings
from server.db import make_engine
from server.migrations import alembic_config


def test_migration_0012_upgrades_and_downgrades_without_losing_submissions(settings: Settings) -> None:
    engine = make_engine(settings.DATABASE_URL)
    try:
        command.upgrade(alembic_config(engine), "head")
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO users (name, display_name, role, created_at) "
                              "VALUES ('ann', 'Ann', 'learner', CURRENT_TIMESTAMP)"))
            conn.execute(text(
                "INSERT INTO submissions (user_id, course_id, exercise, source, source_sha256, status, penalty_percent, "
                "message, stdout, stderr, timings, attempts, created_at) SELECT id, 1, 'gae', 'x', 'h', 'queued', 0, "
                "'', '', '', '{}', 0, CURRENT_TIMESTAMP FROM users WHERE name = 'ann'"))
        assert "score_corrections" in inspect(engine).get_table_names()
        assert "board_real_names" in {c["name"] for c in inspect(engine).get_columns("courses")}
        command.downgrade(alembic_config(engine), "0010")
        assert "score_corrections" not in inspect(engine).get_table_names()
        assert "board_real_names" not in {c["name"] for c in inspect(engine).get_columns("courses")}
        command.upgrade(alembic_config(engine), "head")
        with engine.connect() as conn:
            assert conn.execute(text("SELECT COUNT(*) FROM submissions")).scalar_one() == 1
            assert conn.execute(text("SELECT board_real_names FROM courses")).scalars().all() == [False]
    finally:
        engine.dispose()
