"""Per-learner submission limits: 429 with Retry-After, idempotent replays exempt."""

from __future__ import annotations

from server.config import Settings
from server.submissions.limits import SlidingWindow, parse_rate
from server.models import Role
from tests.server.rows import Rows
from tests.server.conftest import StartApi
from tests.server.fakes import FakeGrader


def test_sliding_window_refuses_then_frees_up() -> None:
    now = [0.0]
    window = SlidingWindow(2, 60, clock=lambda: now[0])
    assert window.hit(1) is None
    now[0] = 10
    assert window.hit(1) is None
    assert window.hit(1) == 50  # the first event leaves the window at t=60
    assert window.hit(2) is None  # per learner
    now[0] = 60
    assert window.hit(1) is None
    assert parse_rate("30/minute") == (30, 60.0) and parse_rate(" 5 / hour ") == (5, 3600.0)


def test_rate_limit_answers_429_with_retry_after(settings: Settings, start_api: StartApi) -> None:
    api = start_api(settings.model_copy(update={"RATE_LIMIT": "2/minute", "MAX_QUEUED_PER_USER": 100}))
    lea = api.user("lea")
    assert api.submit(lea).status_code == 202
    assert api.submit(lea).status_code == 202
    refused = api.submit(lea)
    assert refused.status_code == 429
    assert refused.json()["error"] == "RateLimited" and "2/minute" in refused.json()["detail"]
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert api.submit(api.user("max")).status_code == 202  # another learner is not affected
    teacher = api.user("teacher", Role.INSTRUCTOR)
    assert all(api.submit(teacher).status_code == 202 for _ in range(3))  # instructors unlimited


def test_queued_cap_answers_429_and_replays_are_exempt(settings: Settings, start_api: StartApi) -> None:
    grader = FakeGrader(gated=True)  # nothing finishes while the gate is closed
    api = start_api(settings.model_copy(update={"MAX_QUEUED_PER_USER": 2}), grader.factory)
    lea = api.user("lea")
    first = api.submit(lea, source="a = 1\n")
    api.submit(lea, source="a = 2\n", )
    key = {"Idempotency-Key": "k-1"}
    refused = api.client.post(
        "/api/v1/submissions", json={"exercise": "actor-loss", "source": "a = 3\n"}, headers={**lea, **key}
    )
    assert refused.status_code == 429
    assert refused.json()["error"] == "TooManyQueued"
    assert int(refused.headers["Retry-After"]) >= 1
    assert first.status_code == 202
    grader.gate.set()
    api.wait_done(lea, first.json()["id"])
    api.wait_done(lea, first.json()["id"] + 1)
    created = api.client.post(
        "/api/v1/submissions", json={"exercise": "actor-loss", "source": "a = 3\n"}, headers={**lea, **key}
    )
    assert created.status_code == 202


def test_idempotent_replay_is_not_rate_limited(settings: Settings, start_api: StartApi) -> None:
    api = start_api(settings.model_copy(update={"RATE_LIMIT": "1/hour"}))
    lea = api.user("lea")
    body = {"exercise": "actor-loss", "source": "a = 1\n"}
    headers = {**lea, "Idempotency-Key": "same"}
    assert api.client.post("/api/v1/submissions", json=body, headers=headers).status_code == 202
    replay = api.client.post("/api/v1/submissions", json=body, headers=headers)
    assert replay.status_code == 200
    assert api.submit(lea).status_code == 429


def test_queued_rows_written_elsewhere_count_toward_the_cap(settings: Settings, start_api: StartApi) -> None:
    api = start_api(settings.model_copy(update={"MAX_QUEUED_PER_USER": 1}))
    lea = api.user("lea")
    Rows(api).add("lea", score=None, status="running")
    response = api.submit(lea)
    assert response.status_code == 429 and response.json()["error"] == "TooManyQueued"
