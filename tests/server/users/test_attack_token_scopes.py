"""Scopes red team (issue 36 follow-up): narrowed API tokens attacked over real HTTP, on a real
uvicorn server. Each test here was an attack that succeeded before its fix:

- The body's course check (``server.token_scope._body_courses``/``_named``) gives up when any
  value of a repeated ``"course"`` key is not a string ("the route refuses it, 422"), but the
  route's parser keeps the *last* value: ``{"course": 1, "course": "c2"}`` passes the check
  and the route acts on ``c2`` (or, with ``null`` last, on every course).
  fixed: a limited token gives the key once, as a string (403 otherwise).
- A long poll authenticates once, at its start: a token revoked while it waits still gets the
  verdict when it arrives, although a revoked token is "401 at once" (docs/security.md).
  Fixed: a long poll signs in again before it answers.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from server.app import create_app
from server.config import Settings
from server.db import transaction
from server.models import RegradeSet, Role, Submission
from server.state import AppState
from server.users.service import create_user
from tests.server.fakes import FakeGrader
from tests.server.live_server import live_server

JSON = {"Content-Type": "application/json"}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@dataclass
class Served:
    """A running server over real HTTP: its client, its state and grader."""

    http: httpx.Client
    state: AppState
    grader: FakeGrader

    def user(self, name: str, role: Role = Role.LEARNER) -> dict[str, str]:
        with transaction(self.state.session_factory) as session:
            token = create_user(session, name, role, self.state.settings.secret_bytes).token
        return bearer(token)

    def mint(self, headers: dict[str, str], **body: Any) -> dict[str, str]:
        answer = self.http.post("/api/v1/me/tokens", json=body, headers=headers)
        assert answer.status_code == 201, answer.text
        return bearer(answer.json()["token"])

    def course(self, headers: dict[str, str], slug: str) -> None:
        made = self.http.post("/api/v1/courses", json={"slug": slug, "title": slug, "time_zone": "UTC"}, headers=headers)
        assert made.status_code == 201, made.text
        published = self.http.put(f"/api/v1/courses/{slug}/exercises/actor-loss", json={}, headers=headers)
        assert published.status_code == 200, published.text

    def submit(self, headers: dict[str, str], **extra: Any) -> int:
        body = {"exercise": "actor-loss", "source": "def f():\n    return 1\n", **extra}
        sent = self.http.post("/api/v1/submissions", json=body, headers=headers)
        assert sent.status_code == 202, sent.text
        return int(sent.json()["id"])

    def wait_done(self, headers: dict[str, str], submission_id: int) -> None:
        for _ in range(1200):
            if self.http.get(f"/api/v1/submissions/{submission_id}", headers=headers).json()["status"] == "done":
                return
            threading.Event().wait(0.05)
        raise AssertionError(f"submission {submission_id} not graded")

    def count(self, model: type[Any], *where: Any) -> int:
        with self.state.session_factory() as session:
            return int(session.scalar(select(func.count()).select_from(model).where(*where)) or 0)


def _serve(settings: Settings, grader: FakeGrader) -> Iterator[Served]:
    app = create_app(settings.model_copy(update={"RATE_LIMIT": "1000/minute"}), grader.factory)
    with live_server(app) as base, httpx.Client(base_url=base, timeout=60) as http:
        try:
            yield Served(http, app.state.grader, grader)
        finally:
            grader.gate.set()  # nothing left waiting on the grader at shutdown


@pytest.fixture
def served(settings: Settings) -> Iterator[Served]:
    """A server whose fake grader answers at once."""
    yield from _serve(settings, FakeGrader())


@pytest.fixture
def gated(settings: Settings) -> Iterator[Served]:
    """A server whose fake grader waits for ``grader.gate``."""
    yield from _serve(settings, FakeGrader(gated=True))


def refused(answer: httpx.Response, *words: str) -> bool:
    return (
        answer.status_code == 403
        and answer.json().get("error") == "OutsideTokenScope"
        and all(w in answer.json()["detail"] for w in words)
    )


# --- a repeated "course" key whose first value is not a string -----------------------------


def test_a_repeated_course_key_led_by_a_number_does_not_submit_to_another_course(served: Served) -> None:
    """An instructor of c1 and c2 holding a token for c1 only: the body names c2 after a number.
    Today the check gives up on the number and the route keeps the last value: 202 in c2."""
    teacher = served.user("teach", Role.INSTRUCTOR)
    served.course(teacher, "c1")
    served.course(teacher, "c2")
    c1 = served.mint(teacher, course="c1")
    for first in (b"1", b"true", b"[]", b'{"course": "c1"}'):
        raw = b'{"exercise": "actor-loss", "source": "x = 1", "course": ' + first + b', "course": "c2"}'
        answer = served.http.post("/api/v1/submissions", content=raw, headers={**c1, **JSON})
        assert refused(answer, "'c1'"), (first, answer.status_code, answer.text)
    assert served.count(Submission) == 0  # nothing went into c2


def test_a_repeated_course_key_led_by_a_number_does_not_regrade_another_course(served: Served) -> None:
    """The same body trick on ``POST /regrades``: a c1 token queues a regrade of c2's verdicts."""
    teacher = served.user("teach", Role.INSTRUCTOR)
    served.course(teacher, "c1")
    served.course(teacher, "c2")
    served.wait_done(teacher, served.submit(teacher, course="c2"))
    c1 = served.mint(teacher, course="c1")
    raw = b'{"exercise": "actor-loss", "course": 1, "course": "c2", "all_versions": true}'
    answer = served.http.post("/api/v1/regrades", content=raw, headers={**c1, **JSON})
    assert refused(answer, "'c1'"), (answer.status_code, answer.text)
    assert served.count(RegradeSet) == 0


def test_an_admins_course_token_cannot_regrade_every_course_with_a_repeated_key(served: Served) -> None:
    """An admin's c1 token, ``"course": 1, "course": null``: the route reads null, which for an
    admin is a regrade over every course, the very thing a course-limited token is refused."""
    root = served.user("root", Role.ADMIN)
    served.course(root, "c1")
    lea = served.user("lea")
    served.wait_done(lea, served.submit(lea))  # a verdict in the default course
    c1 = served.mint(root, course="c1")
    plain = served.http.post("/api/v1/regrades", json={"exercise": "actor-loss", "all_versions": True}, headers=c1)
    assert refused(plain, "'c1'"), plain.text  # named as none: refused today
    raw = b'{"exercise": "actor-loss", "course": 1, "course": null, "all_versions": true}'
    answer = served.http.post("/api/v1/regrades", content=raw, headers={**c1, **JSON})
    assert refused(answer, "'c1'"), (answer.status_code, answer.text)
    assert served.count(RegradeSet) == 0


# --- revoking a token that is waiting in a long poll -----------------------------------------


def test_a_long_poll_of_a_token_revoked_while_it_waits_gets_no_verdict(gated: Served) -> None:
    """A learner's read-only laptop token long-polls; the learner revokes it (the laptop is lost)
    before the verdict comes. Today the poll still answers 200 with the verdict."""
    lea = gated.user("lea")
    laptop = gated.mint(lea, scope="read", label="laptop")
    submission_id = gated.submit(lea)
    answers: list[httpx.Response] = []

    def poll() -> None:
        with httpx.Client(base_url=str(gated.http.base_url), timeout=60) as client:
            answers.append(client.get(f"/api/v1/submissions/{submission_id}?wait=30", headers=laptop))

    waiting = threading.Thread(target=poll)
    waiting.start()
    announcer: Any = gated.state.announcer
    for _ in range(1200):  # until the poll has signed in and subscribed
        if announcer._waiting.get(submission_id):
            break
        threading.Event().wait(0.01)
    else:
        raise AssertionError("the long poll never started waiting")
    prefix = next(t["prefix"] for t in gated.http.get("/api/v1/me/tokens", headers=lea).json() if t["label"] == "laptop")
    assert gated.http.delete(f"/api/v1/me/tokens/{prefix}", headers=lea).status_code == 200
    assert gated.http.get(f"/api/v1/submissions/{submission_id}", headers=laptop).status_code == 401  # revoked
    gated.grader.gate.set()
    waiting.join(60)
    assert len(answers) == 1
    assert answers[0].status_code == 401, (answers[0].status_code, answers[0].text[:200])
