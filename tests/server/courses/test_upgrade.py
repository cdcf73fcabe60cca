"""Upgrade: a database made by the migrations before courses (0004), with submissions in it,
migrates to the head and keeps every score and board (SQLite and PostgreSQL)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from alembic import command
from sqlalchemy import text

from server.config import Settings
from server.db import make_engine, make_session_factory, transaction
from server.migrations import alembic_config
from server.models import Role
from tests.server.conftest import StartApi
from tests.server.old_schema import old_schema_user

T0 = datetime(2026, 9, 1, 9, 0, tzinfo=UTC)
LEARNERS = ["ann", "ben", "cat", "dan"]


def _fill_before_courses(settings: Settings) -> str:
    """Migrate to 0003, add users and 160 finished submissions, migrate to 0004 (whose
    backfill builds best_scores, as the pre-course server did); return the instructor's token."""
    engine = make_engine(settings.DATABASE_URL)
    command.upgrade(alembic_config(engine), "0003")
    rng = random.Random(15)
    with transaction(make_session_factory(engine)) as session:
        token = old_schema_user(session, "teacher", Role.INSTRUCTOR, settings.secret_bytes)[1]
        ids = {name: old_schema_user(session, name, Role.LEARNER, settings.secret_bytes)[0] for name in LEARNERS}
        session.flush()
        for n in range(160):
            verdict = rng.choice(["graded"] * 6 + ["crashed", "syntax_error", "internal_error"])
            score = rng.choice([0, 20, 45.5, 80, 100]) if verdict == "graded" else None
            created = T0 + timedelta(minutes=rng.randint(0, 300))
            session.execute(
                text(
                    "INSERT INTO submissions (user_id, exercise, source, source_sha256, status, verdict, score, message,"
                    " stdout, stderr, timings, attempts, created_at, finished_at)"
                    " VALUES (:u, :e, 'x = 1', :sha, 'done', :v, :s, '', '', '', '{}', 1, :c, :c)"
                ),
                {"u": ids[rng.choice(LEARNERS)], "e": rng.choice(["actor-loss", "gae", "dpo-loss"]),
                 "sha": f"{n:064d}", "v": verdict, "s": score, "c": created},
            )
    command.upgrade(alembic_config(engine), "0004")
    engine.dispose()
    return token


def _snapshot(settings: Settings) -> tuple[list[tuple], list[tuple]]:  # type: ignore[type-arg]
    engine = make_engine(settings.DATABASE_URL)
    with engine.connect() as conn:
        subs = conn.execute(text("SELECT id, user_id, exercise, verdict, score FROM submissions ORDER BY id")).all()
        best = conn.execute(text(
            "SELECT user_id, exercise, best_score, attempts, best_reached_at, best_submission_id, solved_at"
            " FROM best_scores ORDER BY user_id, exercise"
        )).all()
    engine.dispose()
    return [tuple(r) for r in subs], [tuple(r) for r in best]


def test_upgrade_keeps_every_score_and_board(settings: Settings, start_api: StartApi) -> None:
    token = _fill_before_courses(settings)
    submissions, best = _snapshot(settings)
    assert len(submissions) == 160 and best

    api = start_api(settings)  # migrates to the head (0006) at start
    engine = api.state.engine
    with engine.connect() as conn:
        after = conn.execute(text(
            "SELECT id, user_id, exercise, verdict, score, course_id, counted_score, late_seconds FROM submissions ORDER BY id"
        )).all()
        best_after = conn.execute(text(
            "SELECT user_id, exercise, best_score, attempts, best_reached_at, best_submission_id, solved_at,"
            " course_id, counted_score, counted_submission_id FROM best_scores ORDER BY user_id, exercise"
        )).all()
    assert [tuple(r[:5]) for r in after] == submissions  # every raw score kept
    assert {(r[5], r[7]) for r in after} == {(1, None)}  # all in the default course, none late
    assert all(r[6] == r[4] for r in after if r[3] == "graded")
    assert len(best_after) == len(best)
    for old, new in zip(best, best_after, strict=True):
        assert _same(old, new[:7]), (old, new)
        assert (new[7], new[8], new[9]) == (1, new[2], new[5])  # the score that counts is the raw one

    # The boards read as before: best desc, first reached asc, user id asc.
    headers = {"Authorization": f"Bearer {token}"}
    for exercise in ("actor-loss", "gae", "dpo-loss"):
        rows = [b for b in best if b[1] == exercise]
        expected = sorted(rows, key=lambda b: (-(b[2] or 0), _time(b[4]) is None, _time(b[4]) or T0, b[0]))
        board = api.client.get(f"/api/v1/leaderboard?exercise={exercise}", headers=headers).json()
        assert board["course"] == "default"
        names = {api_user: name for name, api_user in _ids(api).items()}
        assert [(e["name"], e["board_score"], e["attempts"]) for e in board["entries"]] == [
            (names[b[0]], float(b[2] or 0), b[3]) for b in expected
        ]
    gradebook = api.client.get("/api/v1/gradebook.csv", headers=headers).text.splitlines()
    assert len(gradebook) == 1 + len(LEARNERS) * len(api.client.get("/api/v1/exercises", headers=headers).json())


def test_downgrade_returns_to_0004_and_upgrades_again(settings: Settings) -> None:
    _fill_before_courses(settings)
    _submissions, best = _snapshot(settings)
    engine = make_engine(settings.DATABASE_URL)
    command.upgrade(alembic_config(engine), "head")
    command.downgrade(alembic_config(engine), "0004")
    engine.dispose()
    assert _snapshot(settings)[0] == _submissions
    engine = make_engine(settings.DATABASE_URL)
    command.upgrade(alembic_config(engine), "head")
    with engine.connect() as conn:
        count = conn.execute(text("SELECT COUNT(*) FROM best_scores WHERE course_id = 1")).scalar_one()
    engine.dispose()
    assert count == len(best)


def _ids(api) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with api.state.engine.connect() as conn:
        return {name: uid for uid, name in conn.execute(text("SELECT id, name FROM users")).all()}


def _time(value: object) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    assert isinstance(value, datetime)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _same(old: tuple, new: tuple) -> bool:  # type: ignore[type-arg]
    """Equal rows, timestamps compared as instants (SQLite returns them as text)."""
    return all(
        (_time(a) == _time(b)) if isinstance(a, (str, datetime)) and i in (4, 6) else a == b
        for i, (a, b) in enumerate(zip(old, new, strict=True))
    )
