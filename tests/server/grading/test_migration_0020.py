"""Migration 0020 on SQLite and PostgreSQL: each check row gets the judge's self-reported flag,
backfilled conservatively (confirmed only for a known confirmed check of the built-in
catalogue), nothing lost on the way up or down, and the way back up works."""

from __future__ import annotations

import json
from typing import Any

from alembic import command
from sqlalchemy import text

from server.config import Settings
from server.db import make_engine
from server.migrations import alembic_config

def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


ROWS = [
    ("gae/advantages_default", 1),  # a built-in confirmed check: known, so confirmed
    ("gae/detached", 2),  # a built-in self-reported check
    (None, 3),  # no id (migration 0007 could not match its sentence)
    ("my-pack/values", 4),  # a course pack's check: not known here
]


def test_only_known_confirmed_checks_are_confirmed_and_nothing_is_lost(settings: Settings) -> None:
    engine = make_engine(settings.DATABASE_URL)
    command.upgrade(alembic_config(engine), "0021_version_served")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO users (id, name, display_name, role, created_at) VALUES (5, 'ann', 'Ann', 'learner', '2026-01-01')"))
        conn.execute(text(
            "INSERT INTO submissions (id, user_id, course_id, exercise, source, source_sha256, status, verdict, score, "
            "penalty_percent, message, stdout, stderr, timings, attempts, created_at, content_version, grader_version) "
            "VALUES (1, 5, 1, 'gae', 'x', 'y', 'done', 'graded', 50, 0, '', '', '', '{}', 1, '2026-01-01', 'u', 'u')"))
        for check_id, position in ROWS:
            conn.execute(text("INSERT INTO check_results (submission_id, name, check_id, weight, passed, message, position) "
                              "VALUES (1, 'c', :id, 10, true, '', :p)"), {"id": check_id, "p": position})
        # a regrade keeps check rows as JSON too: its result, and the verdict it superseded
        conn.execute(text(
            "INSERT INTO regrade_sets (id, exercise, all_versions, state, content_version, grader_version, created_at) "
            "VALUES (1, 'gae', false, 'grading', 'c', 'g', '2026-01-01')"))
        stored = json.dumps([{"check_id": check_id, "weight": 10, "passed": True} for check_id, _ in ROWS])
        conn.execute(text(
            "INSERT INTO regrade_results (id, set_id, submission_id, status, attempts, message, checks, stdout, stderr, "
            "timings) VALUES (1, 1, 1, 'done', 1, '', :checks, '', '', '{}')"), {"checks": stored})
        conn.execute(text(
            "INSERT INTO superseded_verdicts (id, submission_id, set_id, message, checks, content_version, "
            "grader_version, superseded_at) VALUES (1, 1, 1, '', :checks, 'c', 'g', '2026-01-01')"), {"checks": stored})
    command.upgrade(alembic_config(engine), "0020_check_self_reported")
    expected = [False, True, True, True]
    with engine.connect() as conn:
        flags = conn.execute(text("SELECT position, self_reported FROM check_results ORDER BY position")).tuples().all()
        assert [(p, bool(f)) for p, f in flags] == list(zip((1, 2, 3, 4), expected))
        for table in ("regrade_results", "superseded_verdicts"):
            checks = _json(conn.execute(text(f"SELECT checks FROM {table}")).scalar())
            assert [c["self_reported"] for c in checks] == expected, table
    command.downgrade(alembic_config(engine), "0021_version_served")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM check_results")).scalar() == len(ROWS)
        checks = _json(conn.execute(text("SELECT checks FROM regrade_results")).scalar())
        assert [sorted(c) for c in checks] == [["check_id", "passed", "weight"]] * len(ROWS)  # as the old code reads them
    command.upgrade(alembic_config(engine), "head")
    with engine.begin() as conn:  # a row written without the flag is not confirmed (the server default)
        conn.execute(text("INSERT INTO check_results (submission_id, name, weight, passed, message, position) "
                          "VALUES (1, 'new', 10, true, '', 9)"))
        assert bool(conn.execute(text("SELECT self_reported FROM check_results WHERE position = 9")).scalar()) is True
    engine.dispose()
