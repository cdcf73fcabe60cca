"""Regrade fixtures: the server tests' apps and databases (SQLite, and PostgreSQL marked
``postgres``), and the ``ppo-grader`` CLI run against the same database."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from typer.testing import CliRunner, Result

from server.cli import app as cli_app
from server.config import Settings
from tests.pg import pg_database, pg_url  # noqa: F401  (fixtures)
from tests.server.conftest import (  # noqa: F401  (fixtures and the backend parametrization)
    api,
    db_backend,
    grader,
    pytest_generate_tests,
    settings,
    start_api,
)

Cli = Callable[..., Result]


@pytest.fixture
def cli(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Cli:  # noqa: F811  (the imported fixture)
    """Run ``ppo-grader ARGS...`` in this process on the test's database; returns the result."""
    monkeypatch.setenv("PPO_GRADER_DATABASE_URL", settings.DATABASE_URL)
    monkeypatch.setenv("PPO_GRADER_QUEUE", settings.QUEUE)

    def run(*args: str) -> Result:
        return CliRunner().invoke(cli_app, list(args))

    return run
