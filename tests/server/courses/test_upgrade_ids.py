"""Migration 0007: check and mistake ids beside the stored sentences, backfilled best effort
from today's wording, and the statistics of an upgraded database unchanged by it (SQLite and
PostgreSQL); downgrade drops them and restores the index."""

from __future__ import annotations

from datetime import UTC, datetime

from alembic import command
from sqlalchemy import inspect, text

from exercises.registry import get_exercise
from server.config import Settings
from server.db import make_engine, make_session_factory, transaction
from server.migrations import alembic_config
from server.models import Role
from tests.server.conftest import StartApi
from tests.server.old_schema import old_schema_user

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def _wording(slug: str, check: str, mistake: str) -> tuple[str, str]:
    exercise = get_exercise(slug)
    return (next(c.name for c in exercise.checks if c.id == check),
            next(m.title for m in exercise.mistakes if m.key == mistake))


#: (exercise, stored sentence, stored title) of each row, and the ids the backfill must give.
GAE_SENTENCE, GAE_TITLE = _wording("gae", "no_bootstrap_from_padding", "bootstrap-from-padding")
ACTOR_SENTENCE, ACTOR_TITLE = _wording("actor-loss", "values_default", "max-for-min")
ROWS = [
    ("gae", GAE_SENTENCE, GAE_TITLE, "gae/no_bootstrap_from_padding", "gae/bootstrap-from-padding"),
    ("gae", GAE_SENTENCE, None, "gae/no_bootstrap_from_padding", None),  # passed: no mistake
    ("actor-loss", ACTOR_SENTENCE, ACTOR_TITLE, "actor-loss/values_default", "actor-loss/max-for-min"),
    # Older wording, or another exercise's: no id is guessed.
    ("actor-loss", "value on random inputs", "max instead of min", None, None),
    ("actor-loss", GAE_SENTENCE, GAE_TITLE, None, None),
]


def _fill_at_0006(settings: Settings) -> str:
    """A database at 0006 holding one graded submission per row of ROWS; the teacher's token."""
    engine = make_engine(settings.DATABASE_URL)
    command.upgrade(alembic_config(engine), "0006")
    with transaction(make_session_factory(engine)) as session:
        token = old_schema_user(session, "teacher", Role.INSTRUCTOR, settings.secret_bytes)[1]
        learner_id = old_schema_user(session, "ann", Role.LEARNER, settings.secret_bytes)[0]
        session.flush()
        for n, (exercise, sentence, title, _, _) in enumerate(ROWS):
            sid = session.execute(
                text(
                    "INSERT INTO submissions (user_id, course_id, exercise, source, source_sha256, status, verdict,"
                    " score, counted_score, message, stdout, stderr, timings, attempts, created_at, finished_at)"
                    " VALUES (:u, 1, :e, 'x = 1', :sha, 'done', 'graded', 50, 50, '', '', '', '{}', 1, :c, :c)"
                    " RETURNING id"
                ),
                {"u": learner_id, "e": exercise, "sha": f"{n:064d}", "c": T0},
            ).scalar_one()
            session.execute(
                text("INSERT INTO check_results (submission_id, name, weight, passed, message, misconception, position)"
                     " VALUES (:s, :n, 10, :p, '', :m, 0)"),
                {"s": sid, "n": sentence, "p": title is None, "m": title},
            )
    engine.dispose()
    return token


def _ids(settings: Settings) -> list[tuple[str | None, str | None]]:
    engine = make_engine(settings.DATABASE_URL)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT check_id, mistake_id FROM check_results ORDER BY submission_id")).all()
    engine.dispose()
    return [tuple(r) for r in rows]  # type: ignore[misc]


def test_upgrade_backfills_ids_from_todays_wording_and_counts_stay(settings: Settings, start_api: StartApi) -> None:
    token = _fill_at_0006(settings)
    api = start_api(settings)  # migrates to the head at start
    assert _ids(settings) == [(check, mistake) for *_, check, mistake in ROWS]
    stats = api.client.get("/api/v1/exercises/actor-loss/stats", headers={"Authorization": f"Bearer {token}"}).json()
    # Matched rows count under their id and today's wording; the others under their stored text.
    assert {(m["mistake_id"], m["mistake_title"], m["learners"]) for m in stats["mistakes"]} == {
        ("actor-loss/max-for-min", ACTOR_TITLE, 1), (None, "max instead of min", 1), (None, GAE_TITLE, 1)}
    assert {(c["check_id"], c["name"], c["runs"]) for c in stats["checks"]} == {
        ("actor-loss/values_default", ACTOR_SENTENCE, 1), (None, "value on random inputs", 1), (None, GAE_SENTENCE, 1)}


def test_downgrade_drops_the_ids_and_restores_the_index(settings: Settings) -> None:
    _fill_at_0006(settings)
    engine = make_engine(settings.DATABASE_URL)
    command.upgrade(alembic_config(engine), "head")
    command.downgrade(alembic_config(engine), "0006")
    columns = {c["name"] for c in inspect(engine).get_columns("check_results")}
    indexes = {i["name"] for i in inspect(engine).get_indexes("check_results")}
    assert {"check_id", "mistake_id"}.isdisjoint(columns) and {"name", "misconception"} <= columns
    assert "ix_check_results_submission_id_name_passed" in indexes
    with engine.connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM check_results")).scalar_one() == len(ROWS)
    command.upgrade(alembic_config(engine), "head")
    engine.dispose()
    assert _ids(settings) == [(check, mistake) for *_, check, mistake in ROWS]
