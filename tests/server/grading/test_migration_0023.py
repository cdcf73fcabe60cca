"""Migration 0023 on SQLite and PostgreSQL: ``check_results.misconception`` becomes
``mistake_title`` and the regrade tables' JSON checks rename the same key; every row and value
is kept, in place (no table copy), down and up again; a stored report that still says
``misconception`` reads as before."""

from __future__ import annotations

import json
from typing import Any

from alembic import command
from sqlalchemy import inspect, text

from server.config import Settings
from server.db import make_engine, make_session_factory
from server.migrations import alembic_config
from server.models import Submission
from server.submissions.service import to_public

BEFORE = "0024_lti_round6"
TITLE = "max instead of min"
#: A report stored before the rename: its diagnosis entry names the mistake's id ``misconception``.
OLD_FEEDBACK = {
    "root_causes": [],
    "diagnosis": [{"misconception": "actor-loss/max-for-min", "title": TITLE, "fix": "use min", "checks": ["clip"]}],
    "summary": {"verdict": "graded", "score": 50, "checks_passed": 1, "checks_total": 2, "headline": "",
                "next_step": None, "details": []},
}


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _fill(settings: Settings):  # type: ignore[no-untyped-def]
    engine = make_engine(settings.DATABASE_URL)
    command.upgrade(alembic_config(engine), BEFORE)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO users (id, name, display_name, role, created_at) VALUES (5, 'ann', 'Ann', 'learner', '2026-01-01')"))
        conn.execute(text(
            "INSERT INTO submissions (id, user_id, course_id, exercise, source, source_sha256, status, verdict, score, "
            "penalty_percent, message, stdout, stderr, timings, attempts, created_at, content_version, grader_version, "
            "feedback) VALUES (1, 5, 1, 'actor-loss', 'x', 'y', 'done', 'graded', 50, 0, '', '', '', '{}', 1, "
            "'2026-01-01', 'u', 'u', :feedback)"), {"feedback": json.dumps(OLD_FEEDBACK)})
        for position, (title, mistake_id) in enumerate([(TITLE, "actor-loss/max-for-min"), (None, None)]):
            conn.execute(text(
                "INSERT INTO check_results (submission_id, name, check_id, weight, passed, message, misconception, "
                "mistake_id, position) VALUES (1, :n, NULL, 50, :p, 'm', :t, :i, :pos)"),
                {"n": f"c{position}", "p": title is None, "t": title, "i": mistake_id, "pos": position})
        conn.execute(text(
            "INSERT INTO regrade_sets (id, exercise, all_versions, state, content_version, grader_version, created_at) "
            "VALUES (1, 'actor-loss', false, 'grading', 'c', 'g', '2026-01-01')"))
        stored = json.dumps([{"name": "c0", "misconception": TITLE, "mistake_id": "actor-loss/max-for-min"},
                             {"name": "c1", "misconception": None, "mistake_id": None}])
        conn.execute(text(
            "INSERT INTO regrade_results (id, set_id, submission_id, status, attempts, message, checks, stdout, stderr, "
            "timings) VALUES (1, 1, 1, 'done', 1, '', :checks, '', '', '{}')"), {"checks": stored})
        conn.execute(text(
            "INSERT INTO superseded_verdicts (id, submission_id, set_id, message, checks, content_version, "
            "grader_version, superseded_at) VALUES (1, 1, 1, '', :checks, 'c', 'g', '2026-01-01')"), {"checks": stored})
    return engine


def _stored(engine, column: str) -> tuple[list[Any], dict[str, list[list[str]]]]:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        rows = conn.execute(text(f"SELECT position, {column}, mistake_id FROM check_results ORDER BY position")).all()
        keys = {table: [list(c) for c in _json(conn.execute(text(f"SELECT checks FROM {table}")).scalar())]
                for table in ("regrade_results", "superseded_verdicts")}
    return [tuple(r) for r in rows], keys


def test_the_column_and_the_json_key_are_renamed_both_ways_and_nothing_is_lost(settings: Settings) -> None:
    engine = _fill(settings)
    command.upgrade(alembic_config(engine), "0023_mistake_title")
    columns = {c["name"] for c in inspect(engine).get_columns("check_results")}
    assert "mistake_title" in columns and "misconception" not in columns
    rows, keys = _stored(engine, "mistake_title")
    assert rows == [(0, TITLE, "actor-loss/max-for-min"), (1, None, None)]
    assert keys == {t: [["name", "mistake_title", "mistake_id"]] * 2 for t in keys}  # in place among the keys
    with engine.connect() as conn:  # the foreign keys' rows are all there (no copy cascaded)
        assert conn.execute(text("SELECT count(*) FROM regrade_results")).scalar() == 1
    command.downgrade(alembic_config(engine), BEFORE)
    rows, keys = _stored(engine, "misconception")
    assert rows == [(0, TITLE, "actor-loss/max-for-min"), (1, None, None)]
    assert keys == {t: [["name", "misconception", "mistake_id"]] * 2 for t in keys}
    command.upgrade(alembic_config(engine), "head")
    assert _stored(engine, "mistake_title")[0] == rows
    engine.dispose()


def test_a_report_stored_before_the_rename_reads_with_the_new_and_the_old_name(settings: Settings) -> None:
    engine = _fill(settings)
    command.upgrade(alembic_config(engine), "head")
    with make_session_factory(engine)() as session:
        public = to_public(session, session.get_one(Submission, 1)).model_dump(mode="json")
    engine.dispose()
    [mistake] = public["feedback"]["diagnosis"]
    assert (mistake["mistake_id"], mistake["misconception"], mistake["title"]) == ("actor-loss/max-for-min",) * 2 + (TITLE,)
    named = public["checks"][0]
    assert (named["mistake_title"], named["misconception"], named["mistake_id"]) == (TITLE, TITLE, "actor-loss/max-for-min")
