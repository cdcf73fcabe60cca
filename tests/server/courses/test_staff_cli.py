"""A course's staff at the terminal: ``courses staff add COURSE NAME --role ta|instructor``, and
corrections signed by the staff account that made them (``--by``, or the owner of
PPO_GRADER_TOKEN), never by the operating system's user."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from typer.testing import CliRunner, Result

from server.cli import app
from server.config import Settings
from server.db import make_engine, make_session_factory
from server.models import Enrollment, ScoreCorrection, User


def run(*args: str, code: int = 0) -> Result:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result


def rows(settings: Settings, query):  # type: ignore[no-untyped-def]
    engine = make_engine(settings.DATABASE_URL)
    try:
        with make_session_factory(engine)() as session:
            return session.execute(query).all()
    finally:
        engine.dispose()


def test_a_ta_joins_a_course_and_signs_corrections(env: Settings, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    prof_token = run("users", "add", "prof", "--role", "instructor").stdout.strip()
    run("courses", "create", "rlhf-a", "--instructor", "prof")
    roster = tmp_path / "roster.csv"
    roster.write_text("name,display_name\nann,Ann A.\n")
    run("courses", "enroll", "rlhf-a", str(roster))
    run("sets", "publish", "rlhf-a", "gae")

    added = run("courses", "staff", "add", "rlhf-a", "tara", "--role", "ta")
    assert added.stdout.strip().startswith("ppg_") and "'tara' is now a TA of 'rlhf-a'" in added.stderr
    (tara_role, course_role), = rows(env, select(User.role, Enrollment.role).join(Enrollment, Enrollment.user_id == User.id)
                                     .where(User.name == "tara"))
    assert (tara_role, course_role) == ("learner", "instructor")  # staff of this course only

    # No --by and no token: refused, and the course's staff are named to choose from.
    refused = run("scores", "override", "rlhf-a", "ann", "gae", "90", "--reason", "by hand", code=2)
    assert "--by NAME" in refused.stderr and "prof" in refused.stderr and "tara" in refused.stderr
    assert "Traceback" not in refused.output
    learner_signs = run("scores", "excuse", "rlhf-a", "ann", "gae", "--reason", "ill", "--by", "ann", code=2)
    assert "'ann' is not staff of 'rlhf-a'" in learner_signs.stderr
    run("scores", "override", "rlhf-a", "ann", "gae", "90", "--reason", "by hand", "--by", "nobody", code=2)

    done = run("scores", "override", "rlhf-a", "ann", "gae", "90", "--reason", "by hand", "--by", "tara")
    assert "now 90 (override by tara: by hand)" in done.stderr
    monkeypatch.setenv("PPO_GRADER_TOKEN", prof_token)  # the instructor this terminal is logged in as
    run("scores", "undo", "rlhf-a", "ann", "gae", "override")
    run("scores", "excuse", "rlhf-a", "ann", "gae", "--reason", "ill")
    signed = [r[0] for r in rows(env, select(ScoreCorrection.made_by).order_by(ScoreCorrection.id))]
    assert signed == ["tara", "prof"]  # the override (revoked by prof), then prof's excuse
    assert all(not name.startswith("cli:") for name in signed)


def test_an_instructor_added_to_a_course_gets_an_instructor_account(env: Settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    run("courses", "create", "rlhf-b")
    run("users", "add", "gus")
    added = run("courses", "staff", "add", "rlhf-b", "gus", "--role", "instructor")
    assert added.stdout == "" and "their account is now an instructor account" in added.stderr
    assert rows(env, select(User.role).where(User.name == "gus")) == [("instructor",)]
    run("courses", "staff", "add", "rlhf-b", "gus", "--role", "boss", code=2)
    assert "default course" in run("courses", "staff", "add", "default", "gus", code=2).stderr
