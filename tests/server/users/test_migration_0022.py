"""Migration 0022_token_scopes on SQLite and PostgreSQL: existing tokens become full and
unlimited, the scope is a closed list and the course a real foreign key (deleting the course
deletes its tokens), and the way down revokes the narrowed tokens (they would come back
unlimited) and loses no row; the way back up works."""

from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError

from server.config import Settings
from server.db import make_engine
from server.migrations import alembic_config

_TOKEN = (
    "INSERT INTO api_tokens (id, user_id, token_hash, prefix, created_at{extra}) "
    "VALUES ({id}, 5, 'hash{id}', 'ppg_{id}', '2026-01-01'{values})"
)


def test_tokens_become_full_and_unlimited_and_narrowed_ones_are_revoked_on_the_way_down(settings: Settings) -> None:
    engine = make_engine(settings.DATABASE_URL)
    command.upgrade(alembic_config(engine), "0020_check_self_reported")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO users (id, name, display_name, role, created_at) VALUES (5, 'ann', 'Ann', 'learner', '2026-01-01')"))
        conn.execute(text("INSERT INTO courses (id, slug, title, time_zone, created_at) VALUES (7, 'exam', 'Exam', 'UTC', '2026-01-01')"))
        conn.execute(text(_TOKEN.format(id=1, extra="", values="")))
        conn.execute(text("INSERT INTO lti_tickets (id, token, user_id, api_token_id, destination, expires_at) "
                          "VALUES (1, 't', 5, 1, '/dashboard', '2026-01-02')"))
    command.upgrade(alembic_config(engine), "0022_token_scopes")
    with engine.begin() as conn:
        assert conn.execute(text("SELECT scope, course_id, label, revoked_at FROM api_tokens")).all() == [("full", None, None, None)]
        conn.execute(text(_TOKEN.format(id=2, extra=", scope, course_id, label", values=", 'read', 7, 'laptop'")))
        conn.execute(text(_TOKEN.format(id=3, extra=", scope", values=", 'read'")))
        conn.execute(text(_TOKEN.format(id=4, extra=", course_id", values=", 7")))
    for bad in (", scope", ", course_id"):  # not in the closed list; no such course
        with pytest.raises(IntegrityError), engine.begin() as conn:
            conn.execute(text(_TOKEN.format(id=9, extra=bad, values=", 'admin'" if "scope" in bad else ", 99")))
    command.downgrade(alembic_config(engine), "0020_check_self_reported")
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT id, revoked_at IS NOT NULL FROM api_tokens ORDER BY id")).all()
        assert [(i, bool(r)) for i, r in rows] == [(1, False), (2, True), (3, True), (4, True)]
        assert conn.execute(text("SELECT api_token_id FROM lti_tickets")).all() == [(1,)]  # the copy cascaded nothing
    assert {c["name"] for c in inspect(engine).get_columns("api_tokens")} == {
        "id", "user_id", "token_hash", "prefix", "created_at", "revoked_at"}
    assert {i["name"] for i in inspect(engine).get_indexes("api_tokens")} >= {"ix_api_tokens_user_id"}
    command.upgrade(alembic_config(engine), "head")
    with engine.begin() as conn:
        conn.execute(text("UPDATE api_tokens SET course_id = 7 WHERE id = 1"))
        conn.execute(text("DELETE FROM courses WHERE id = 7"))  # its tokens go with it, never widened
    with engine.connect() as conn:
        assert conn.execute(text("SELECT id FROM api_tokens ORDER BY id")).all() == [(2,), (3,), (4,)]
    engine.dispose()
