"""The ``ppo-grader`` command line (serve is covered by the end-to-end tests)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from server.cli import app
from server.config import Settings
from server.db import make_engine, make_session_factory
from server.security import hash_token
from server.users.service import user_for_token
from tests.server.conftest import served_database


def test_users_add_prints_a_token_stored_hashed(env: Settings) -> None:
    result = CliRunner().invoke(app, ["users", "add", "alice", "--role", "instructor", "--display-name", "Alice A."])
    assert result.exit_code == 0, result.output
    token = result.stdout.strip().splitlines()[-1]
    assert token.startswith("ppg_")
    engine = make_engine(env.DATABASE_URL)
    with make_session_factory(engine)() as session:
        user = user_for_token(session, token, env.secret_bytes)
        assert user is not None and (user.name, user.role, user.display_name) == ("alice", "instructor", "Alice A.")
    with engine.connect() as connection:
        hashes = connection.exec_driver_sql("SELECT token_hash FROM api_tokens").scalars().all()
    engine.dispose()
    assert hashes == [hash_token(token, env.secret_bytes)]

    listing = CliRunner().invoke(app, ["users", "list"])
    assert listing.exit_code == 0
    assert "alice" in listing.stdout and "instructor" in listing.stdout
    assert token not in listing.stdout


def test_duplicate_user_is_one_red_line_exit_2(env: Settings) -> None:
    assert CliRunner().invoke(app, ["users", "add", "bob"]).exit_code == 0
    result = CliRunner().invoke(app, ["users", "add", "bob"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: A user named 'bob' exists already."
    assert "Traceback" not in result.output


def test_bad_role_is_a_usage_error(env: Settings) -> None:
    result = CliRunner().invoke(app, ["users", "add", "carol", "--role", "superuser"])
    assert result.exit_code == 2


def test_production_with_default_secret_refuses_to_start(env: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PPO_GRADER_ENVIRONMENT", "production")
    for command in (["serve"], ["users", "list"]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 2
        assert "SECRET_KEY" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        assert "Traceback" not in result.output


def test_exercises_list(env: Settings) -> None:
    result = CliRunner().invoke(app, ["exercises", "list"])
    assert result.exit_code == 0
    assert "actor-loss" in result.stdout


@pytest.mark.slow
def test_exercises_verify_grades_one_exercise_in_the_real_jail(env: Settings) -> None:
    result = CliRunner().invoke(app, ["exercises", "verify", "whiten"])
    assert result.exit_code == 0, result.stdout
    assert "whiten (pack built-in)" in result.stdout
    assert "1 of 1 exercise(s) pass verify" in result.stdout



def test_admin_commands_find_the_served_database_say_which_and_never_create_one(
    tmp_path, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    """Issue 25: run from another folder without PPO_GRADER_DATABASE_URL, an admin command
    used to create a new ./data/ database and print a token the real server rejected. Issue 32:
    the record is the installation's own (its data folder), and one that is gone is an error."""
    from server.location import remember

    monkeypatch.delenv("PPO_GRADER_DATABASE_URL", raising=False)
    monkeypatch.delenv("PPO_GRADER_ENVIRONMENT", raising=False)
    monkeypatch.delenv("PPO_GRADER_CONFIG", raising=False)
    data = tmp_path / "install" / "data"
    monkeypatch.setenv("PPO_GRADER_DATA_DIR", str(data))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    refused = CliRunner().invoke(app, ["users", "add", "bob"])
    assert refused.exit_code == 2 and "Traceback" not in refused.output
    assert f"no ppo-grader database at sqlite:///{data}/ppo-grader.db" in refused.stderr and "--init" in refused.stderr
    assert not data.exists() and not (elsewhere / "data").exists()  # nothing was created

    served = tmp_path / "server" / "grader.db"
    url = f"sqlite:///{served}"
    served_database(Settings(DATABASE_URL=url))
    assert remember(url) == data / "server.json"  # what `serve --database URL` does
    found = CliRunner().invoke(app, ["users", "add", "bob"])
    assert found.exit_code == 0, found.output
    assert f"database: {url} (from {data / 'server.json'})" in found.stderr
    assert found.stdout.strip().startswith("ppg_")

    served.unlink()  # the recorded database is gone: every command says so, none makes a new one
    for command in (["users", "list"], ["--init", "users", "add", "carol"], ["similarity", "c"], ["migrate"]):
        gone = CliRunner().invoke(app, command)
        assert gone.exit_code == 2, (command, gone.output)
        assert "no longer exists" in gone.stderr and str(data / "server.json") in gone.stderr, command
        assert not served.exists(), command

    (data / "server.json").unlink()
    created = CliRunner().invoke(app, ["--init", "users", "add", "carol"])
    assert created.exit_code == 0, created.output
    assert (data / "ppo-grader.db").exists()  # asked for with --init, in the installation's data folder
    assert not (elsewhere / "data").exists()


def test_serve_records_its_packs_only_once_they_load(env: Settings, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """Issue 32: the packs given to serve are the service's from then on, for every command;
    a pack that fails to load stops serve with one line and is not recorded."""
    from server.catalogue.packs_config import recorded_packs

    monkeypatch.delenv("PPO_GRADER_EXERCISE_PACKS", raising=False)
    missing = CliRunner().invoke(app, ["serve", "--pack", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2 and missing.stderr.strip() == f"error: exercise pack {tmp_path / 'nowhere'} is not a folder"
    broken = tmp_path / "broken" / "my_diff"
    broken.mkdir(parents=True)
    for name in ("spec.py", "starter.py", "reference.py", "checks.py", "mutants.py"):
        (broken / name).write_text("raise RuntimeError('not yet')\n" if name == "spec.py" else "")
    failed = CliRunner().invoke(app, ["serve", "--pack", str(tmp_path / "broken")])
    assert failed.exit_code == 2 and "RuntimeError" in failed.stderr and len(failed.stderr.strip().splitlines()) == 1
    engine = make_engine(env.DATABASE_URL)
    with make_session_factory(engine)() as session:
        assert recorded_packs(session) == []
    engine.dispose()


def test_similarity_from_a_folder_without_a_database_is_one_line_and_makes_no_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Issue 33: ``similarity`` built its own engine; it goes through the one guard now. Run as a
    user runs it (a process of its own, ``python -m server.cli``) from a folder where no
    database was ever recorded, it says where it looked and what to do, and no SQLite file
    appears, there or in the installation's data folder."""
    import os
    import subprocess
    import sys

    from server.location import ENV_RECORD, ENV_URL

    data = tmp_path / "install" / "data"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in (ENV_URL, ENV_RECORD, "PPO_GRADER_ENVIRONMENT")}
    env["PPO_GRADER_DATA_DIR"] = str(data)
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    run = subprocess.run(
        [sys.executable, "-m", "server.cli", "similarity", "fall"],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stderr.strip().splitlines() == [
        f"error: no ppo-grader database at sqlite:///{data}/ppo-grader.db (from this installation's data folder "
        f"{data}): start `ppo-grader serve` there first, set PPO_GRADER_DATABASE_URL to the server's database, "
        "or pass --init to create one"
    ]
    assert list(tmp_path.rglob("*")) == [elsewhere]  # no database, no data folder, nothing
