"""Migration 0020 on SQLite and PostgreSQL: each check row gets the judge's self-reported flag,
backfilled conservatively (confirmed only for a known confirmed check of the built-in
catalogue), nothing lost on the way up or down, and the way back up works."""

from __future__ import annotations

from alembic import command
from sqlalchemy import text

from server.config import Settings
from server.db import make_engine
from server.migrations import alembic_config

ROWS = [
    ("gae/advantages_default", 1),  # a built-in confirmed check: known, so confirmed
    ("gae/detached", 2),  # a built-in self-reported check
    (None, 3),  # no id (migration 0007 could not match its sentence)
    ("my-pack/values", 4),  # a course pack's check: not known here
]


def test_only_known_confirmed_checks_are_confirmed_and_nothing_is_lost(settings: Settings) -> None:
    engine = make_engine(settings.DATABASE_URL)
    command.upgrade(alembic_config(engine), "0018_exercise_versions")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO users (id, name, display_name, role, created_at) VALUES (5, 'ann', 'Ann', 'learner', '2026-01-01')"))
        conn.execute(text(
            "INSERT INTO submissions (id, user_id, course_id, exercise, source, source_sha256, status, verdict, score, "
            "penalty_percent, message, stdout, stderr, timings, attempts, created_at, content_version, grader_version) "
            "VALUES (1, 5, 1, 'gae', 'x', 'y', 'done', 'graded', 50, 0, '', '', '', '{}', 1, '2026-01-01', 'u', 'u')"))
        for check_id, position in ROWS:
            conn.execute(text("INSERT INTO check_results (submission_id, name, check_id, weight, passed, message, position) "
                              "VALUES (1, 'c', :id, 10, true, '', :p)"), {"id": check_id, "p": position})
    command.upgrade(alembic_config(engine), "0020_check_self_reported")
    with engine.connect() as conn:
        flags = conn.execute(text("SELECT position, self_reported FROM check_results ORDER BY position")).tuples().all()
        assert [(p, bool(f)) for p, f in flags] == [(1, False), (2, True), (3, True), (4, True)]
    command.downgrade(alembic_config(engine), "0018_exercise_versions")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM check_results")).scalar() == len(ROWS)
    command.upgrade(alembic_config(engine), "head")
    with engine.begin() as conn:  # a row written without the flag is not confirmed (the server default)
        conn.execute(text("INSERT INTO check_results (submission_id, name, weight, passed, message, position) "
                          "VALUES (1, 'new', 10, true, '', 9)"))
        assert bool(conn.execute(text("SELECT self_reported FROM check_results WHERE position = 9")).scalar()) is True
    engine.dispose()
