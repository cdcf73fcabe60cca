"""Course fixtures: an app whose clock the test sets (no sleeping, no wall clock), a course
team, and helpers to publish, submit at a given moment and read what came back."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from server.app import create_app
from server.config import Settings
from server.db import transaction
from server.models import Role
from server.users.service import create_user

# tests/server/conftest.py (the parent folder's) gives the server fixtures and the
# sqlite/postgres parametrization.
from tests.server.conftest import Api
from tests.server.fakes import FakeGrader

#: Monday 7 December 2026, 09:00 in Paris (08:00 UTC): the exercise opens.
RELEASE = datetime(2026, 12, 7, 8, 0, tzinfo=UTC)
#: Friday 11 December 2026, 17:00 in Paris: due.
DUE = datetime(2026, 12, 11, 16, 0, tzinfo=UTC)
#: Sunday 13 December 2026, 17:00 in Paris: hard close.
CLOSE = datetime(2026, 12, 13, 16, 0, tzinfo=UTC)
SECOND = timedelta(seconds=1)
DAY = timedelta(days=1)
HOUR = timedelta(hours=1)


@dataclass
class FakeClock:
    """The app's "now"; tests move it."""

    now: datetime = RELEASE

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Term:
    """One started app with a fake clock, an instructor and helpers."""

    api: Api
    clock: FakeClock
    instructor: dict[str, str]
    tokens: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def client(self) -> TestClient:
        return self.api.client

    def user(self, name: str, role: Role = Role.LEARNER) -> dict[str, str]:
        self.tokens[name] = self.api.user(name, role)
        return self.tokens[name]

    def course(self, slug: str, time_zone: str = "Europe/Paris", headers: dict[str, str] | None = None) -> None:
        answer = self.client.post(
            "/api/v1/courses", json={"slug": slug, "title": slug.upper(), "time_zone": time_zone},
            headers=headers or self.instructor,
        )
        assert answer.status_code == 201, answer.text

    def enroll(self, course: str, *names: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
        """Enroll users (created when new, tokens kept) through the roster endpoint."""
        csv = "name,display_name\n" + "".join(f"{n},{n.title()}\n" for n in names)
        answer = self.client.post(f"/api/v1/courses/{course}/roster", content=csv.encode(),
                                  headers={**(headers or self.instructor), "Content-Type": "text/csv"})
        assert answer.status_code == 200, answer.text
        for row in answer.json()["rows"]:
            if row["token"]:
                self.tokens[row["name"]] = {"Authorization": f"Bearer {row['token']}"}
        return answer.json()

    def publish(self, course: str, exercise: str = "actor-loss", headers: dict[str, str] | None = None, **rules: Any) -> Any:
        body = {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in rules.items()}
        return self.client.put(f"/api/v1/courses/{course}/exercises/{exercise}", json=body,
                               headers=headers or self.instructor)

    def submit_at(self, moment: datetime, name: str, exercise: str = "actor-loss", course: str | None = None) -> Any:
        """Submit as ``name`` with the clock at ``moment``; a 202 is waited on until graded."""
        self.clock.now = moment
        body: dict[str, Any] = {"exercise": exercise, "source": f"x = {moment.timestamp()}\n"}
        if course is not None:
            body["course"] = course
        answer = self.client.post("/api/v1/submissions", json=body, headers=self.tokens[name])
        if answer.status_code == 202:
            return self.api.wait_done(self.tokens[name], answer.json()["id"])
        return answer


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def term(settings: Settings, grader: FakeGrader, clock: FakeClock) -> Iterator[Term]:
    """An app on the parametrized database with the fake clock; generous submission limits."""
    settings = settings.model_copy(update={"RATE_LIMIT": "1000/minute", "MAX_QUEUED_PER_USER": 100})
    client = TestClient(create_app(settings, grader.factory, clock=clock), raise_server_exceptions=False)
    client.__enter__()
    try:
        api = Api(client, client.app.state.grader)  # type: ignore[attr-defined]
        with transaction(api.state.session_factory) as session:
            token = create_user(session, "prof", Role.INSTRUCTOR, settings.secret_bytes).token
        yield Term(api, clock, {"Authorization": f"Bearer {token}"})
    finally:
        client.__exit__(None, None, None)
