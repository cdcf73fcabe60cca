"""Migration 0027 on SQLite and PostgreSQL: ``audit_events`` is created (its closed list of
actions held by the database), and ``extensions`` gains ``granted_by`` and ``reason`` in place:
an extension granted before keeps its row (no table copy cascaded), reads "not recorded" in the
course's ledger, and the downgrade drops both and the table, keeping the extension."""

from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import inspect, select, text
from sqlalchemy.exc import IntegrityError

from server.config import Settings
from server.courses.corrections import ledger
from server.db import make_engine, make_session_factory
from server.migrations import alembic_config
from server.models import Course

BEFORE = "0026_lti_claimed_at"


def test_the_audit_table_and_the_extension_columns_both_ways(settings: Settings) -> None:
    engine = make_engine(settings.DATABASE_URL)
    try:
        command.upgrade(alembic_config(engine), BEFORE)
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO users (id, name, display_name, role, created_at) "
                              "VALUES (5, 'ann', 'Ann', 'learner', '2026-01-01')"))
            conn.execute(text("INSERT INTO courses (id, slug, title, time_zone, created_at) "
                              "VALUES (2, 'winter', 'Winter', 'UTC', '2026-01-01')"))
            conn.execute(text("INSERT INTO extensions (course_id, user_id, exercise, due_at, granted_at) "
                              "VALUES (2, 5, 'gae', '2026-12-14 09:00:00+00', '2026-12-01 09:00:00+00')"))
        command.upgrade(alembic_config(engine), "0027_audit_log")
        columns = {c["name"] for c in inspect(engine).get_columns("extensions")}
        assert {"granted_by", "reason"} <= columns and "audit_events" in inspect(engine).get_table_names()
        with make_session_factory(engine)() as session:
            course = session.scalar(select(Course).where(Course.slug == "winter"))
            assert course is not None
            [line] = ledger(session, course)
            assert (line.kind, line.learner, line.exercise, line.made_by, line.reason) == (
                "extension", "ann", "gae", "not recorded", "")
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO audit_events (course_id, actor_id, actor, action, target, detail, at) "
                              "VALUES (2, 5, 'ann', 'extension.grant', 'ann/gae', '', '2026-12-01')"))
        with pytest.raises(IntegrityError), engine.begin() as conn:  # the closed list, in the database too
            conn.execute(text("INSERT INTO audit_events (course_id, actor, action, target, detail, at) "
                              "VALUES (2, 'x', 'drop.everything', 't', '', '2026-12-01')"))
        command.downgrade(alembic_config(engine), BEFORE)
        assert "audit_events" not in inspect(engine).get_table_names()
        assert "granted_by" not in {c["name"] for c in inspect(engine).get_columns("extensions")}
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM extensions")).scalar() == 1
        command.upgrade(alembic_config(engine), "head")
    finally:
        engine.dispose()
