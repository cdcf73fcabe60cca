"""Issue 38: when the server is told to stop (``begin_shutdown``, what ``serve`` calls on
SIGTERM), every waiting long poll answers 503 ``ShuttingDown`` with ``Retry-After`` at once,
later ones do not wait, plain reads still answer, and the job in hand goes back to the queue
with its attempt uncounted. Real HTTP (a live uvicorn), so the polls really wait together."""

from __future__ import annotations

import asyncio

import httpx
from fastapi import FastAPI

from server.app import begin_shutdown, create_app
from server.config import Settings
from server.db import transaction
from server.models import Role, Submission
from server.state import AppState
from server.users.service import create_user
from tests.server.fakes import FakeGrader
from tests.server.live_server import live_server

POLLS = 50


async def _poll_all(base_url: str, headers: dict[str, str], ids: list[int], app: FastAPI) -> list[httpx.Response]:
    """``POLLS`` long polls over ``ids``; ``begin_shutdown`` once all wait; every answer."""
    state: AppState = app.state.grader
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=base_url, headers=headers, limits=limits, timeout=20) as client:
        # wait=30 and a 20 s client timeout: a poll that is not woken fails the test.
        polls = [
            asyncio.create_task(client.get(f"/api/v1/submissions/{ids[i % len(ids)]}", params={"wait": "30"}))
            for i in range(POLLS)
        ]
        for _ in range(400):
            if state.announcer.waiting() >= POLLS:
                break
            await asyncio.sleep(0.05)
        assert state.announcer.waiting() == POLLS
        assert not any(p.done() for p in polls)
        begin_shutdown(app)
        return list(await asyncio.gather(*polls))


def test_begin_shutdown_answers_every_long_poll_503_and_returns_the_job_in_hand(settings: Settings) -> None:
    grader = FakeGrader(gated=True)  # the first submission stays in the worker's hands
    app = create_app(settings.model_copy(update={"SHUTDOWN_GRACE_SECONDS": 0.5, "MAX_LONG_POLLS_PER_USER": POLLS}), grader.factory)
    try:
        with live_server(app) as base_url:
            state: AppState = app.state.grader
            with transaction(state.session_factory) as session:
                token = create_user(session, "ada", Role.LEARNER, settings.secret_bytes).token
            headers = {"Authorization": f"Bearer {token}"}
            with httpx.Client(base_url=base_url, headers=headers, timeout=20) as client:
                ids = [
                    client.post("/api/v1/submissions", json={"exercise": "actor-loss", "source": f"x = {i}\n"}).json()[
                        "id"
                    ]
                    for i in range(3)
                ]
            assert grader.started.wait(10)

            answers = asyncio.run(_poll_all(base_url, headers, ids, app))
            assert [(r.status_code, r.headers.get("retry-after"), r.json()["error"]) for r in answers] == [
                (503, "1", "ShuttingDown")
            ] * POLLS
            assert state.announcer.waiting() == 0
            with httpx.Client(base_url=base_url, headers=headers, timeout=20) as client:
                late = client.get(f"/api/v1/submissions/{ids[1]}", params={"wait": "30"})
                assert (late.status_code, late.json()["error"]) == (503, "ShuttingDown")  # no wait at all
                plain = client.get(f"/api/v1/submissions/{ids[1]}")
                assert (plain.status_code, plain.json()["status"]) == (200, "queued")  # reads still answer
        # The lifespan's end gave up on the job in hand after the grace: back in the queue, uncounted.
        with state.session_factory() as session:
            rows = [session.get(Submission, i) for i in ids]
            assert [(r.status, r.attempts, r.verdict) for r in rows if r is not None] == [("queued", 0, None)] * 3
    finally:
        grader.gate.set()
