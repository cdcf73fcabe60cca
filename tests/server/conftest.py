"""Server fixtures: a fresh SQLite file per test, an app with a controllable grader, and
users with tokens."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from server.app import GraderFactory, create_app
from server.config import Settings
from server.courses.service import enroll
from server.db import transaction
from server.models import AuditEvent, Course, Role, User
from server.state import AppState
from server.users.service import create_user
from server.web.session import COOKIE_NAME, form_token
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


# Helpers for the tests that serve the app over a real socket (``tests.server.live_server``):
# the API with a bearer token, a logged-in browser session (httpx or Playwright), the users,
# their enrolments and a submission graded to the end.


def served_api(url: str, token: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
    """One request to the served app's API (``url`` is its root) as the holder of ``token``."""
    return httpx.request(method, f"{url}/api/v1{path}", headers={"Authorization": f"Bearer {token}"},
                         timeout=30, **kwargs)


def logged_in(url: str, token: str, secret: bytes) -> tuple[httpx.Client, str]:
    """A client logged in to the served app by ``token`` (its cookie jar) and its session's form token."""
    client = httpx.Client(base_url=url, timeout=30, follow_redirects=False)
    landed = client.post("/login", data={"token": token})
    assert landed.status_code == 303, landed.text
    return client, form_token(client.cookies[COOKIE_NAME], secret)


def user_tokens(factory: Any, secret: bytes, roles: Iterable[tuple[str, Role]]) -> dict[str, str]:
    """Create each named user with its role; their tokens by name."""
    with transaction(factory) as session:
        return {name: create_user(session, name, role, secret).token for name, role in roles}


def enroll_named(factory: Any, rows: Iterable[tuple[str, str, str]]) -> None:
    """Enrol users in courses by name: each row is (course slug, user name, course role)."""
    with transaction(factory) as session:
        courses = {c.slug: c for c in session.scalars(select(Course))}
        users = {u.name: u for u in session.scalars(select(User))}
        for slug, name, role in rows:
            enroll(session, courses[slug], users[name], role)


def audit_events(factory: Any) -> list[tuple[str | None, int | None, str, str]]:
    """The audit log, oldest first: (actor, actor id, action, target) of each event."""
    with factory() as session:
        return [(e.actor, e.actor_id, e.action, e.target)
                for e in session.scalars(select(AuditEvent).order_by(AuditEvent.id))]


def user_id_of(factory: Any, name: str) -> int:
    """The id of the user by that name (who must exist)."""
    with factory() as session:
        found = session.scalar(select(User.id).where(User.name == name))
        assert found is not None
        return found


def wait_graded(url: str, token: str, submission_id: int) -> Any:
    """The submission once its status is ``done`` (a minute at most), as its owner reads it."""
    deadline = time.monotonic() + 60
    while (found := served_api(url, token, "GET", f"/submissions/{submission_id}").json())["status"] != "done":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return found


def browser_login(browser: Any, url: str, token: str) -> Any:
    """A Playwright page in a new browser context, logged in with ``token`` from the login form
    the page at ``url`` shows (30 s for each wait)."""
    page = browser.new_context().new_page()
    page.set_default_timeout(30_000)
    page.goto(url)
    page.fill("#token", token)
    # the page the login leads to has loaded before the caller acts on it (a reload() during the
    # login's own navigation fails: "Not attached to an active page")
    with page.expect_navigation():
        page.click("button[type=submit]")
    return page


def preview_regrade_in_browser(page: Any, exercise: str) -> None:
    """On the Regrades page: preview a regrade of every counted verdict of ``exercise``, then reload
    until the set is ready (a minute at most)."""
    page.click("nav a:has-text('Regrades')")
    page.select_option("#rp-exercise", exercise)
    page.check("#rp-all")
    page.click("#regrade-preview button[type=submit]")
    deadline = time.monotonic() + 60
    while "ready:" not in page.inner_text("#regrade-state"):
        assert time.monotonic() < deadline, page.inner_text("#regrade-state")
        page.reload()


def answer_in_browser(page: Any, text: str, score: str) -> None:
    """On a submission's page: answer its open review request with ``text`` and an override to
    ``score``, then wait until it shows as resolved."""
    form = page.wait_for_selector("form.answer-form")
    request_id = (form.get_attribute("id") or "").removeprefix("answer-")
    page.fill(f"#a-text-{request_id}", text)
    page.fill(f"#a-score-{request_id}", score)
    page.click(f"#answer-{request_id} button[type=submit]")
    page.wait_for_selector("#review-requests li.request[data-state=resolved]")
