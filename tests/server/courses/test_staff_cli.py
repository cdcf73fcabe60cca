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
from server.models import AuditEvent, Enrollment, ScoreCorrection, User


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


def test_staff_are_removed_at_the_terminal_and_the_last_instructor_stays(env: Settings) -> None:
    run("users", "add", "prof", "--role", "instructor")
    run("courses", "create", "rlhf-c", "--instructor", "prof")
    run("courses", "staff", "add", "rlhf-c", "tara")
    dry = run("courses", "staff", "remove", "rlhf-c", "tara", "--dry-run")
    assert dry.stdout == "" and "Dry run: 'tara' would no longer be a TA of 'rlhf-c'; nothing changed." in dry.stderr
    staff = select(User.name).join(Enrollment, Enrollment.user_id == User.id).where(Enrollment.role == "instructor")
    assert sorted(r[0] for r in rows(env, staff)) == ["prof", "tara"]
    done = run("courses", "staff", "remove", "rlhf-c", "tara")
    assert "'tara' is no longer a TA of 'rlhf-c'." in done.stderr
    assert [r[0] for r in rows(env, staff)] == ["prof"]
    assert "'tara' is not staff of 'rlhf-c'" in run("courses", "staff", "remove", "rlhf-c", "tara", code=2).stderr
    last = run("courses", "staff", "remove", "rlhf-c", "prof", "--dry-run", code=2)
    assert "'prof' is the last instructor of 'rlhf-c'" in last.stderr and "Traceback" not in last.output
    assert "default course" in run("courses", "staff", "remove", "default", "prof", code=2).stderr
    assert "No course called 'nope'" in run("courses", "staff", "remove", "nope", "prof", code=2).stderr
    logged = rows(env, select(AuditEvent.actor, AuditEvent.action, AuditEvent.target).where(
        AuditEvent.action == "staff.remove"))
    assert [(action, target) for _, action, target in logged] == [("staff.remove", "tara")]
    assert logged[0][0].startswith("cli:")


def test_hidden_scores_are_released_and_held_at_the_terminal(env: Settings) -> None:
    run("courses", "create", "rlhf-d")
    refused = run("sets", "release", "rlhf-d", "gae", code=2)
    assert "'gae' is not published in 'rlhf-d'" in refused.stderr
    run("sets", "publish", "rlhf-d", "gae", "--due", "2031-01-01T17:00", "--feedback", "hidden-until-due")
    dry = run("sets", "release", "rlhf-d", "gae", "--dry-run")
    assert "Dry run: the hidden scores of 'gae' in 'rlhf-d' would be released (0 submissions); nothing" in dry.stderr
    assert "feedback: hidden-until-due" in run("sets", "list", "rlhf-d").stdout
    done = run("sets", "release", "rlhf-d", "gae")
    assert "Released the hidden scores of 'gae' in 'rlhf-d': learners see them now (0 submissions); feedback: full." \
        in " ".join(done.stderr.split())
    assert "feedback: full" in run("sets", "list", "rlhf-d").stdout
    assert "are not held back" in run("sets", "release", "rlhf-d", "gae", code=2).stderr
    assert "would be held until each learner's due date" in run("sets", "hold", "rlhf-d", "gae", "--dry-run").stderr
    assert "feedback: full" in run("sets", "list", "rlhf-d").stdout
    held = run("sets", "hold", "rlhf-d", "gae")
    assert "Held the scores of 'gae' in 'rlhf-d' until each learner's due date" in held.stderr
    assert "feedback: hidden-until-due" in run("sets", "list", "rlhf-d").stdout
    logged = rows(env, select(AuditEvent.action).where(AuditEvent.action.like("scores.%")).order_by(AuditEvent.id))
    assert [r[0] for r in logged] == ["scores.release", "scores.hold"]
