"""Migration 0028 on SQLite and PostgreSQL: ``review_comments`` and ``review_requests`` are
created, the partial unique index holds one open request per submission in the database, the
audit log's closed list gains the two review actions while keeping every event made before
(SQLite: a batch copy of ``audit_events``); the downgrade drops the tables, deletes the review
events (the old list would refuse them) and refuses the new actions again."""

from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError

from server.config import Settings
from server.db import make_engine
from server.migrations import alembic_config

BEFORE = "0027_audit_log"
AFTER = "0028_human_review"
SUBMISSION = (
    "INSERT INTO submissions (id, user_id, course_id, exercise, source, source_sha256, status, verdict, score, "
    "penalty_percent, message, stdout, stderr, timings, attempts, content_version, grader_version, created_at) "
    "VALUES (7, 5, 2, 'gae', 'x = 1', 'y', 'done', 'graded', 50, 0, '', '', '', '{}', 1, 'u', 'u', '2026-01-01')"
)
REQUEST = ("INSERT INTO review_requests (submission_id, course_id, user_id, message, state, created_at) "
           "VALUES (7, 2, 5, 'please', :state, '2026-12-01')")
EVENT = ("INSERT INTO audit_events (course_id, actor, action, target, detail, at) "
         "VALUES (2, 'tara', :action, 'ann/gae', '', '2026-12-01')")


def test_the_review_tables_and_the_audit_actions_both_ways(settings: Settings) -> None:
    engine = make_engine(settings.DATABASE_URL)
    try:
        command.upgrade(alembic_config(engine), BEFORE)
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO users (id, name, display_name, role, created_at) "
                              "VALUES (5, 'ann', 'Ann', 'learner', '2026-01-01')"))
            conn.execute(text("INSERT INTO courses (id, slug, title, time_zone, created_at) "
                              "VALUES (2, 'winter', 'Winter', 'UTC', '2026-01-01')"))
            conn.execute(text(SUBMISSION))
            conn.execute(text(EVENT), {"action": "score.override"})
        with pytest.raises(IntegrityError), engine.begin() as conn:  # not yet in the list
            conn.execute(text(EVENT), {"action": "review.comment"})

        command.upgrade(alembic_config(engine), AFTER)
        assert {"review_comments", "review_requests"} <= set(inspect(engine).get_table_names())
        with engine.begin() as conn:
            conn.execute(text(EVENT), {"action": "review.comment"})
            conn.execute(text(EVENT), {"action": "review.answer"})
            conn.execute(text(REQUEST), {"state": "resolved"})
            conn.execute(text(REQUEST), {"state": "open"})  # one open beside a resolved one
            conn.execute(text("INSERT INTO review_comments (submission_id, course_id, line, body, author, created_at) "
                              "VALUES (7, 2, 1, 'look', 'tara', '2026-12-01')"))
            kept = conn.execute(text("SELECT action FROM audit_events ORDER BY id")).scalars().all()
        assert kept == ["score.override", "review.comment", "review.answer"]  # the copy kept the old event
        with pytest.raises(IntegrityError), engine.begin() as conn:  # a second open request
            conn.execute(text(REQUEST), {"state": "open"})
        with pytest.raises(IntegrityError), engine.begin() as conn:  # still a closed list
            conn.execute(text(EVENT), {"action": "drop.everything"})
        with pytest.raises(IntegrityError), engine.begin() as conn:
            conn.execute(text("INSERT INTO review_comments (submission_id, course_id, line, body, author, created_at) "
                              "VALUES (7, 2, 0, 'line zero', 'tara', '2026-12-01')"))

        command.downgrade(alembic_config(engine), BEFORE)
        assert not {"review_comments", "review_requests"} & set(inspect(engine).get_table_names())
        with engine.connect() as conn:
            assert conn.execute(text("SELECT action FROM audit_events")).scalars().all() == ["score.override"]
            assert conn.execute(text("SELECT count(*) FROM submissions")).scalar() == 1
        with pytest.raises(IntegrityError), engine.begin() as conn:
            conn.execute(text(EVENT), {"action": "review.answer"})
        command.upgrade(alembic_config(engine), "head")
    finally:
        engine.dispose()
