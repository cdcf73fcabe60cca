"""Server fixtures: a fresh SQLite file per test, an app with a controllable grader, and
users with tokens."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from fastapi.testclient import TestClient

from server.app import GraderFactory, create_app
from server.config import Settings
from server.db import transaction
from server.models import Role
from server.state import AppState
from server.users.service import create_user
from tests.pg import pg_database, pg_url  # noqa: F401  (fixtures)
from tests.server.fakes import FakeGrader

if TYPE_CHECKING:
    from tests.server.rows import Rows

# Tests that are not about the database run on SQLite only.
_SQLITE_ONLY_MODULES = {"test_real_judge"}
_SQLITE_ONLY_TESTS = {"test_sqlite_folder_is_created"}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run every database test on SQLite and on the local PostgreSQL (marked ``postgres``)."""
    if "db_backend" not in metafunc.fixturenames:
        return
    module = metafunc.module.__name__.rsplit(".", 1)[-1]
    if module in _SQLITE_ONLY_MODULES or metafunc.function.__name__ in _SQLITE_ONLY_TESTS:
        return
    metafunc.parametrize("db_backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])


@pytest.fixture
def db_backend() -> str:
    """``sqlite`` unless parametrized (see ``pytest_generate_tests``)."""
    return "sqlite"


@pytest.fixture
def settings(tmp_path: Path, db_backend: str, request: pytest.FixtureRequest) -> Settings:
    """Development settings on a fresh database (a temporary SQLite file, or the session's
    PostgreSQL database emptied for this test), one worker."""
    if db_backend == "postgres":
        url = request.getfixturevalue("pg_url")
    else:
        url = f"sqlite:///{tmp_path / 'db' / 'grader.db'}"
    return Settings(DATABASE_URL=url, WORKERS=1)


@pytest.fixture
def grader() -> FakeGrader:
    """A fake grader that answers immediately with a 75-point report."""
    return FakeGrader()


@dataclass
class Api:
    """A started app, its client, and helpers to make users."""

    client: TestClient
    state: AppState

    def user(self, name: str, role: Role = Role.LEARNER) -> dict[str, str]:
        """Create a user; return the Authorization header for their token."""
        with transaction(self.state.session_factory) as session:
            token = create_user(session, name, role, self.state.settings.secret_bytes).token
        return {"Authorization": f"Bearer {token}"}

    def submit(self, headers: dict[str, str], source: str = "def f():\n    return 1\n", **extra: Any) -> Any:
        """POST a submission for the ``actor-loss`` exercise."""
        body = {"exercise": "actor-loss", "source": source, **extra}
        return self.client.post("/api/v1/submissions", json=body, headers=headers)

    def wait_done(self, headers: dict[str, str], submission_id: int, timeout: float = 60) -> dict[str, Any]:
        """Poll until the submission is ``done``; fail the test on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            body = self.client.get(f"/api/v1/submissions/{submission_id}", headers=headers).json()
            if body["status"] == "done":
                return body
            time.sleep(0.05)
        raise AssertionError(f"submission {submission_id} not done after {timeout}s: {body}")


StartApi = Callable[..., Api]


@pytest.fixture
def start_api(settings: Settings, grader: FakeGrader) -> Iterator[StartApi]:
    """Start apps (lifespan included); every one started is shut down after the test."""
    clients: list[TestClient] = []

    def start(settings: Settings = settings, grader_factory: GraderFactory | None = None) -> Api:
        client = TestClient(create_app(settings, grader_factory or grader.factory), raise_server_exceptions=False)
        client.__enter__()
        clients.append(client)
        return Api(client, client.app.state.grader)  # type: ignore[attr-defined]

    yield start
    for client in reversed(clients):
        client.__exit__(None, None, None)


@pytest.fixture
def api(start_api: StartApi) -> Api:
    """One started app with the fake grader."""
    return start_api()


def served_database(settings: Settings) -> None:
    """Migrate ``settings``' database, as ``ppo-grader serve`` does at its first start."""
    from server.db import make_engine
    from server.migrations import upgrade_to_head

    engine = make_engine(settings.DATABASE_URL)
    try:
        upgrade_to_head(engine)
    finally:
        engine.dispose()


@pytest.fixture
def rows(api: Api) -> Rows:
    """Finished submissions written straight into the test's database (tests/server/rows.py)."""
    from tests.server.rows import Rows

    return Rows(api)


@pytest.fixture
def env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The environment an administrator's `ppo-grader` command reads: this test's database, no
    production flag, secret or remote token from the shell, and a database `serve` has set up
    (admin commands refuse one it never did)."""
    monkeypatch.setenv("PPO_GRADER_DATABASE_URL", settings.DATABASE_URL)
    monkeypatch.delenv("PPO_GRADER_ENVIRONMENT", raising=False)
    monkeypatch.delenv("PPO_GRADER_SECRET_KEY", raising=False)
    monkeypatch.delenv("PPO_GRADER_TOKEN", raising=False)
    served_database(settings)
    return settings
