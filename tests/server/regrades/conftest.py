"""Regrade fixtures: the server tests' apps and databases (SQLite, and PostgreSQL marked
``postgres``), and the ``ppo-grader`` CLI run against the same database."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from typer.testing import CliRunner, Result

from server.cli import app as cli_app
from server.config import Settings
from tests.pg import pg_database, pg_url  # noqa: F401  (fixtures)

# tests/server/conftest.py (the parent folder's) gives the server fixtures and the
# sqlite/postgres parametrization.

Cli = Callable[..., Result]


@pytest.fixture
def cli(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Cli:
    """Run ``ppo-grader ARGS...`` in this process on the test's database; returns the result."""
    monkeypatch.setenv("PPO_GRADER_DATABASE_URL", settings.DATABASE_URL)
    monkeypatch.setenv("PPO_GRADER_QUEUE", settings.QUEUE)

    def run(*args: str) -> Result:
        return CliRunner().invoke(cli_app, list(args))

    return run
