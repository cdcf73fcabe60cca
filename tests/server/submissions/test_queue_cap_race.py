"""The per-learner cap on waiting submissions holds under concurrent POSTs (issue 10, class 9).

Many POSTs from one learner arrive at once through real HTTP on a real uvicorn server, on
SQLite and on PostgreSQL. Before the fix each request counted the learner's waiting rows
before any of them had inserted, so all were accepted (4 of 4 with the cap at 2).
"""

from __future__ import annotations

import threading

import httpx
from sqlalchemy import func, select

from server.app import create_app
from server.config import Settings
from server.db import transaction
from server.models import Role, Submission
from server.state import AppState
from server.users.service import create_user
from tests.server.fakes import FakeGrader
from tests.server.live_server import live_server

CAP = 2
CONCURRENT = 8


def _post_all_at_once(base_url: str, token: str, count: int) -> list[httpx.Response]:
    """``count`` POSTs released together by a barrier, one client (connection) each."""
    barrier = threading.Barrier(count)
    responses: list[httpx.Response | BaseException] = [RuntimeError("not run")] * count

    def post(index: int) -> None:
        with httpx.Client(base_url=base_url, timeout=60) as client:
            body = {"exercise": "actor-loss", "source": f"def f():\n    return {index}\n"}
            headers = {"Authorization": f"Bearer {token}"}
            client.get("/api/v1/health", headers=headers)  # open the connection before the race
            barrier.wait()
            try:
                responses[index] = client.post("/api/v1/submissions", json=body, headers=headers)
            except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
                responses[index] = exc

    threads = [threading.Thread(target=post, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert all(isinstance(r, httpx.Response) for r in responses), responses
    return responses  # type: ignore[return-value]


def test_concurrent_posts_never_pass_the_queue_cap(settings: Settings) -> None:
    settings = settings.model_copy(update={"MAX_QUEUED_PER_USER": CAP, "RATE_LIMIT": "1000/minute"})
    grader = FakeGrader(gated=True)  # nothing finishes: every accepted row stays waiting
    app = create_app(settings, grader.factory)
    with live_server(app) as base_url:
        state: AppState = app.state.grader
        with transaction(state.session_factory) as session:
            learner = create_user(session, "racer", Role.LEARNER, settings.secret_bytes)
        token, user_id = learner.token, learner.user.id

        try:
            responses = _post_all_at_once(base_url, token, CONCURRENT)
        finally:
            grader.gate.set()  # let the worker finish, so that shutdown does not wait on it

        codes = sorted(r.status_code for r in responses)
        assert codes == [202] * CAP + [429] * (CONCURRENT - CAP), codes
        for refused in (r for r in responses if r.status_code == 429):
            assert refused.json()["error"] == "TooManyQueued"
            assert int(refused.headers["Retry-After"]) > 0
        with state.session_factory() as session:
            stored = session.scalar(select(func.count()).select_from(Submission).where(Submission.user_id == user_id))
        assert stored == CAP


def test_the_cap_frees_up_as_submissions_finish(settings: Settings) -> None:
    """After the race, finished submissions make room again (the lock is not held on)."""
    settings = settings.model_copy(update={"MAX_QUEUED_PER_USER": 1, "RATE_LIMIT": "1000/minute"})
    grader = FakeGrader()  # answers at once
    app = create_app(settings, grader.factory)
    with live_server(app) as base_url:
        state: AppState = app.state.grader
        with transaction(state.session_factory) as session:
            learner = create_user(session, "patient", Role.LEARNER, settings.secret_bytes)
        headers = {"Authorization": f"Bearer {learner.token}"}
        with httpx.Client(base_url=base_url, timeout=60) as client:
            for index in range(3):
                body = {"exercise": "actor-loss", "source": f"def f():\n    return {index}\n"}
                created = client.post("/api/v1/submissions", json=body, headers=headers)
                assert created.status_code == 202, created.text
                submission_id = created.json()["id"]
                for _ in range(600):
                    if client.get(f"/api/v1/submissions/{submission_id}", headers=headers).json()["status"] == "done":
                        break
                    threading.Event().wait(0.05)
                else:
                    raise AssertionError("not graded")
