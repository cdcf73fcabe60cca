"""The diagnosis bomb and forged self-reported facts (issue 19) through the running service
(real app, in-process worker, real jail, SQLite):
the diagnosis bomb leaves the server's memory and /health alone, and forged self-reported facts
gain no board place over the honest baseline."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from exercises.registry import get_exercise
from tests.hostile import harness_attack_sources as S
from tests.hostile import sources as H
from tests.hostile.test_attack_harness_and_results import attached_gae

pytestmark = pytest.mark.slow
USERS = ("ann", "mallory", "bob", "eve", "zed")


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, jail: Any) -> Iterator[tuple[Any, dict[str, dict[str, str]]]]:
    from fastapi.testclient import TestClient

    from server.app import create_app, real_grader
    from server.config import Settings
    from server.db import transaction
    from server.models import Role
    from server.users.service import create_user

    db = Path(tmp_path_factory.mktemp("issue19")) / "grader.db"
    settings = Settings(DATABASE_URL=f"sqlite:///{db}", WORKERS=1, SECRET_KEY="issue19-service-secret",
                        CPU_SECONDS=2, WALL_SECONDS=3, MEMORY_BYTES=512 << 20)
    client = TestClient(create_app(settings, real_grader), raise_server_exceptions=False)
    client.__enter__()
    try:
        state = client.app.state.grader  # type: ignore[attr-defined]
        headers = {}
        with transaction(state.session_factory) as session:
            for name in USERS:
                headers[name] = {"Authorization": f"Bearer {create_user(session, name, Role.LEARNER, settings.secret_bytes).token}"}
            teacher = create_user(session, "prof", Role.INSTRUCTOR, settings.secret_bytes).token
            headers["prof"] = {"Authorization": f"Bearer {teacher}"}
        yield client, headers
    finally:
        client.__exit__(None, None, None)


class Graded:
    """A verdict fetched through the API, with what waiting for it cost."""

    def __init__(self, body: dict[str, Any], seconds: float, worst_health: float) -> None:
        self.body, self.seconds, self.worst_health = body, seconds, worst_health


def grade(service: Any, user: str, exercise: str, source: str, timeout: float = 120) -> Graded:
    """Submit and wait for the verdict, asking /health all along; the slowest /health is kept
    so a test can compare a hostile submission's with an honest one's measured under the same
    load (a fixed bound fails on a loaded CI machine, where one slow answer is not a freeze)."""
    client, headers = service
    t0 = time.monotonic()
    response = client.post("/api/v1/submissions", json={"exercise": exercise, "source": source}, headers=headers[user])
    assert response.status_code == 202, response.text
    sid = response.json()["id"]
    worst_health = 0.0
    while time.monotonic() - t0 < timeout:
        health_t0 = time.monotonic()
        assert client.get("/api/v1/health").status_code == 200
        worst_health = max(worst_health, time.monotonic() - health_t0)
        body = client.get(f"/api/v1/submissions/{sid}", headers=headers[user]).json()
        if body["status"] == "done":
            return Graded(body, time.monotonic() - t0, worst_health)
        time.sleep(0.05)
    raise AssertionError(f"submission {sid} not done in {timeout}s")


def _rss() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * 4096


class PeakRss:
    """The server process's largest resident size while the block runs, sampled every 10 ms."""

    def __enter__(self) -> PeakRss:
        self.before = self.peak = _rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, _rss())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.after = _rss()


def test_the_diagnosis_bomb_leaves_the_server_memory_and_time_alone(service: Any) -> None:
    ex = get_exercise("gae")
    honest = grade(service, "zed", "gae", ex.reference_source)  # the baseline, under this load
    assert honest.body["score"] == 100
    bombs = {
        "forged tree": S.FORGE_ONE_TENSOR_NAMED_MANY_TIMES.format(elements=1 << 21, copies=300),
        "return big, big": S.RETURN_BIG_BIG.format(function=ex.function_name, elements=1 << 16),
    }
    for name, source in bombs.items():
        with PeakRss() as rss:
            bomb = grade(service, "zed", "gae", source)
        body, seconds = bomb.body, bomb.seconds
        assert body["verdict"] in ("crashed", "graded") and body["score"] == 0, (name, body["message"])
        # The forged tree is written at import, before any input was given: since the jail gets
        # its inputs only when the module asks for them, such an "ok" is refused as malformed
        # before its tree is read (the repeated-name rule itself: tests/sandbox/test_boundary.py).
        assert name != "forged tree" or any(
            why in body["message"] for why in ("more than once", "could not read the results")
        ), body["message"]
        print(f"{name}: RSS {rss.before >> 20} MiB before, peak {rss.peak >> 20} MiB, {seconds:.2f} s "
              f"(honest {honest.seconds:.2f} s); slowest /health {bomb.worst_health:.2f} s "
              f"(honest {honest.worst_health:.2f} s)")
        assert rss.peak - rss.before < 200 << 20, (name, rss.before >> 20, rss.peak >> 20)
        assert seconds < honest.seconds + 10, (name, seconds, honest.seconds)
        # A frozen API misses /health for the whole diagnosis (seconds); a loaded machine
        # slows the honest run's /health as much as the bomb's.
        assert bomb.worst_health < 2.0 + 5 * honest.worst_health, (name, bomb.worst_health, honest.worst_health)


def _board(service: Any, exercise: str) -> list[dict[str, Any]]:
    client, headers = service
    response = client.get(f"/api/v1/leaderboard?exercise={exercise}", headers=headers["prof"])
    assert response.status_code == 200, response.text
    return response.json()["entries"]


def _speed(service: Any, exercise: str) -> list[str]:
    client, headers = service
    response = client.get(f"/api/v1/leaderboard/{exercise}/speed", headers=headers["prof"])
    assert response.status_code == 200, response.text
    return [e["name"] for e in response.json()["entries"]]


def test_forged_detachment_probes_gain_no_board_place(service: Any) -> None:
    honest = attached_gae()  # the baseline: outputs left attached, the detachment check fails
    forged = S.FRAME_WALK_FORGE_PROBES + honest.replace(
        "    dtype = rewards.dtype", "    _forge_probes()\n    dtype = rewards.dtype", 1)
    ann = grade(service, "ann", "gae", honest).body
    mallory = grade(service, "mallory", "gae", forged).body
    assert ann["score"] < 100 and mallory["score"] == 100  # the forgery still fools the detachment check
    rows = {r["name"]: r for r in _board(service, "gae")}
    assert rows["mallory"]["board_score"] == rows["ann"]["board_score"]
    assert rows["mallory"]["rank"] > rows["ann"]["rank"]  # a tie, broken by who was first
    assert rows["mallory"]["raw_best_score"] == 100
    speed = _speed(service, "gae")
    assert "mallory" not in speed or "ann" in speed  # the speed board does not reward the forgery either


def test_numpy_loss_with_forged_gradients_gains_no_board_place(service: Any) -> None:
    bob = grade(service, "bob", "actor-loss", H.HONEST).body
    eve = grade(service, "eve", "actor-loss", S.NUMPY_LOSS_WITH_FORGED_GRADIENTS).body
    assert bob["score"] == 100 and eve["verdict"] == "graded"
    rows = {r["name"]: r for r in _board(service, "actor-loss")}
    assert rows["eve"]["board_score"] <= rows["bob"]["board_score"]
    assert rows["eve"]["rank"] > rows["bob"]["rank"]
