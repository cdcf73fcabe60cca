"""Settings, migrations and the first start."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from pydantic import ValidationError

from server.config import Settings
from server.db import make_engine
from server.migrations import include_name, upgrade_to_head
from server.models import Base
from tests.server.conftest import StartApi

TOKEN_LINE = re.compile(r"Instructor token \(shown once\): (\S+)")


def test_first_start_creates_an_instructor_and_prints_its_token_once(
    start_api: StartApi, capsys: pytest.CaptureFixture[str]
) -> None:
    api = start_api()
    printed = TOKEN_LINE.findall(capsys.readouterr().out)
    assert len(printed) == 1
    me = api.client.get("/api/v1/me", headers={"Authorization": f"Bearer {printed[0]}"}).json()
    assert (me["name"], me["role"]) == ("instructor", "instructor")

    api.client.__exit__(None, None, None)
    start_api()  # a restart on the same database
    assert "Instructor token" not in capsys.readouterr().out


def test_sqlite_folder_is_created(settings: Settings, tmp_path: Path, start_api: StartApi) -> None:
    assert not (tmp_path / "db").exists()
    start_api()
    assert (tmp_path / "db" / "grader.db").is_file()


def test_production_refuses_default_or_short_secret() -> None:
    with pytest.raises(ValidationError, match="SECRET_KEY"):
        Settings(ENVIRONMENT="production")
    with pytest.raises(ValidationError, match="at least 32"):
        Settings(ENVIRONMENT="production", SECRET_KEY="short-but-not-default")
    assert Settings(ENVIRONMENT="production", SECRET_KEY="x" * 32).ENVIRONMENT == "production"
    assert Settings().ENVIRONMENT == "development"  # the default secret is fine on a laptop


def test_settings_read_the_prefixed_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PPO_GRADER_DATABASE_URL", "sqlite:///elsewhere.db")
    monkeypatch.setenv("PPO_GRADER_WORKERS", "5")
    settings = Settings()
    assert (settings.DATABASE_URL, settings.WORKERS) == ("sqlite:///elsewhere.db", 5)
    assert "dev-insecure" not in repr(settings)  # the secret is not printed


def test_migrations_match_the_models(settings: Settings) -> None:
    engine = make_engine(settings.DATABASE_URL)
    upgrade_to_head(engine)
    upgrade_to_head(engine)  # idempotent: a second start applies nothing
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True, "include_name": include_name})
        diff = compare_metadata(context, Base.metadata)
    engine.dispose()
    assert diff == []


def test_the_jail_limits_default_to_the_sandboxs_own() -> None:
    """One place states the jail's default limits (sandbox.protocol.SandboxLimits); the settings
    only override them, and the judge factory hands them through unchanged."""
    from sandbox.protocol import SandboxLimits
    from server.grading.grader import sandbox_limits

    assert sandbox_limits(Settings()) == SandboxLimits()


def test_the_start_up_log_lists_the_packs_it_grades(start_api: StartApi, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO", logger="server.app"):
        start_api()
    lines = [r.getMessage() for r in caplog.records if r.name == "server.app"]
    assert any(line.startswith("packs: built-in (11 exercises)") for line in lines), lines
