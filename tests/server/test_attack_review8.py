"""Review 8, through the running service (the real app, its in-process workers, the real jail,
SQLite): a white-box red team of the jail's boundary and of the API's waiting.

Each test asserts what a safe service does (a strict xfail while the attack worked; fixed by the
seccomp filter's refusal of file locks, and by a per-user cap on waiting long polls that, with
in-process workers, re-read their row once a second at most instead of every 50 ms). Assertions read what a learner's
JSON holds, or compare another learner's verdict time with a baseline measured in the same
test. The jail-level attacks of the same review are in tests/sandbox/test_attack_review8.py,
where the attempts that failed are listed too.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from exercises.framework import CaseGen
from exercises.judge import mix_seed
from exercises.registry import get_exercise
from tests.sandbox.review8_sources import IMPORT_ERROR_FROM_THE_OTHER_JAIL, LEAK_TYPES

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
NOW = datetime.now(UTC)
HONEST = (REPO / "exercises" / "actor_loss" / "reference.py").read_text()


@dataclass
class Service:
    client: TestClient
    headers: dict[str, dict[str, str]]
    secret: bytes

    def grade(self, user: str, course: str, source: str) -> dict[str, Any]:
        answer = self.client.post("/api/v1/submissions", json={"exercise": "actor-loss", "source": source,
                                                               "course": course}, headers=self.headers[user])
        assert answer.status_code == 202, answer.text
        sid = answer.json()["id"]
        for _ in range(600):
            body = self.client.get(f"/api/v1/submissions/{sid}?wait=1", headers=self.headers[user]).json()
            if body["status"] == "done":
                return body
        raise AssertionError(f"submission {sid} not done")


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """A hidden-until-due course whose actor-loss is due next week; limits that leave the two
    jails of a submission time to talk."""
    from server.app import create_app, real_grader
    from server.config import Settings
    from server.db import transaction
    from server.models import Role
    from server.users.service import create_user

    db = Path(tmp_path_factory.mktemp("review8")) / "grader.db"
    settings = Settings(DATABASE_URL=f"sqlite:///{db}", WORKERS=1, SECRET_KEY="review8-service-secret",
                        CPU_SECONDS=5, WALL_SECONDS=10, MEMORY_BYTES=1 << 30, RATE_LIMIT="1000/minute",
                        MAX_QUEUED_PER_USER=50)
    client = TestClient(create_app(settings, real_grader), raise_server_exceptions=False)
    client.__enter__()
    try:
        state = client.app.state.grader  # type: ignore[attr-defined]
        with transaction(state.session_factory) as session:
            prof = {"Authorization": f"Bearer {create_user(session, 'prof', Role.INSTRUCTOR, settings.secret_bytes).token}"}
        headers = {"prof": prof}
        answer = client.post("/api/v1/courses", json={"slug": "r8-hidden", "title": "R8", "time_zone": "UTC"},
                             headers=prof)
        assert answer.status_code == 201, answer.text
        answer = client.post("/api/v1/courses/r8-hidden/roster", content=b"name,display_name\nmal,Mal\n",
                             headers={**prof, "Content-Type": "text/csv"})
        assert answer.status_code == 200, answer.text
        for row in answer.json()["rows"]:
            headers[row["name"]] = {"Authorization": f"Bearer {row['token']}"}
        answer = client.put("/api/v1/courses/r8-hidden/exercises/actor-loss", headers=prof, json={
            "release_at": (NOW - timedelta(days=1)).isoformat(), "due_at": (NOW + timedelta(days=7)).isoformat(),
            "feedback_policy": "hidden-until-due"})
        assert answer.status_code == 200, answer.text
        yield Service(client, headers, settings.secret_bytes)
    finally:
        client.__exit__(None, None, None)


def _hidden_byte(secret: bytes, sid: int) -> int:
    """The byte the attack carries: from the first value of the measured case's warm-up input,
    rebuilt here from the server's secret (what the learner must not learn before the due date)."""
    cases = get_exercise("actor-loss").build_cases(CaseGen(mix_seed(secret, "actor-loss", sid)))
    warmup = next(c for c in cases if c.memory).warmup
    assert warmup is not None
    return int(abs(warmup.args[0].reshape(-1)[0].item()) * 1000) % 256


def _shown_type_and_place(record: dict[str, Any]) -> tuple[str | None, str | None]:
    """The exception type and the function of the place the learner's record shows."""
    text = repr(record)
    types = [t for t in LEAK_TYPES if re.search(rf"\b{t}\b", text)]
    places = re.findall(r"def (_r\d+)\(e\)", text) + re.findall(r"'function': '(_r\d+)'", text)
    return (types[0] if types else None), (places[0] if places else None)


def test_an_import_error_shown_before_the_due_date_carries_nothing_of_the_inputs(service: Service) -> None:
    leaked = []
    for _ in range(8):  # which of the two jails starts first is a race; most tries land
        done = service.grade("mal", "r8-hidden", IMPORT_ERROR_FROM_THE_OTHER_JAIL)
        assert done["feedback_view"] == "hidden", done
        if done["verdict"] != "runtime_error":
            continue
        byte = _hidden_byte(service.secret, done["id"])
        shown = _shown_type_and_place(done)
        if shown == (LEAK_TYPES[byte & 15], f"_r{byte >> 4}"):
            leaked.append((done["id"], byte, shown))
    assert not leaked, f"import errors whose type and line spell a hidden input byte: {leaked}"


# --- long polls: one learner's idle connections hold the API ---------------------------------

#: Holds a worker for the wall limit at import: a submission that stays unfinished while polled.
SLOW = "import time\ntime.sleep(600)\n"
#: How many long polls the flood keeps open (one learner; each is one idle HTTP connection).
FLOOD = 200


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """A real ``ppo-grader serve`` (SQLite, two in-process workers: the embedded default) in a
    process of its own, and the Authorization headers of three learners."""
    port = _free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PPO_GRADER_")},
        "PPO_GRADER_DATABASE_URL": f"sqlite:///{tmp_path}/grader.db",
        "PPO_GRADER_WORKERS": "2",
        "PPO_GRADER_WALL_SECONDS": "90",
        "PPO_GRADER_SECRET_KEY": "review8-secret-" + "q" * 32,
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "client"), os.environ.get("PYTHONPATH", "")]),
    }
    log = tmp_path / "server.log"
    with log.open("w+") as err:
        proc = subprocess.Popen([str(BIN / "ppo-grader"), "serve", "--port", str(port)], env=env,
                                stdout=subprocess.DEVNULL, stderr=err, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/api/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        headers = {}
        for name in ("ann", "mal", "bob"):
            out = subprocess.run([str(BIN / "ppo-grader"), "users", "add", name, "--role", "learner"], env=env,
                                 capture_output=True, text=True, check=True, timeout=60)
            headers[name] = {"Authorization": f"Bearer {out.stdout.strip().splitlines()[-1]}"}
        yield url, headers  # type: ignore[misc]
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:  # open long polls hold uvicorn's graceful shutdown
            proc.kill()
            proc.wait(10)


async def _verdict_seconds(client: httpx.AsyncClient, headers: dict[str, str], limit: float) -> tuple[float, list[Any]]:
    """Seconds from an honest submission to its verdict (``limit`` when it did not come in time),
    and what this learner was answered meanwhile other than 200/202 (a status, or an error's name)."""
    t0 = time.monotonic()
    bad: list[Any] = []
    sid = None
    while time.monotonic() - t0 < limit:
        left = max(0.1, limit - (time.monotonic() - t0))
        try:
            if sid is None:
                answer = await client.post("/api/v1/submissions", json={"exercise": "actor-loss", "source": HONEST},
                                           headers=headers, timeout=left)
                if answer.status_code != 202:
                    bad.append(answer.status_code)
                    continue
                sid = answer.json()["id"]
            got = await client.get(f"/api/v1/submissions/{sid}?wait={min(5.0, left):.1f}", headers=headers,
                                   timeout=left)
        except httpx.HTTPError as exc:
            bad.append(type(exc).__name__)
            continue
        if got.status_code != 200:
            bad.append(got.status_code)
        elif got.json()["status"] == "done":
            return time.monotonic() - t0, bad
    return limit, bad


def test_one_learners_long_polls_do_not_hold_the_api(served: tuple[str, dict[str, str]]) -> None:
    url, headers = served

    async def attack() -> tuple[float, float, list[Any], list[Any]]:
        limits = httpx.Limits(max_connections=FLOOD + 20, max_keepalive_connections=FLOOD + 20)
        async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120) as client:
            await _verdict_seconds(client, headers["ann"], 120)  # warm: the first grading starts hosts
            baseline, _ = await _verdict_seconds(client, headers["ann"], 120)
            slow = await client.post("/api/v1/submissions", json={"exercise": "actor-loss", "source": SLOW},
                                     headers=headers["mal"])
            assert slow.status_code == 202, slow.text
            sid = slow.json()["id"]
            stop = time.monotonic() + 60
            answered: list[Any] = []

            async def poll() -> None:
                while time.monotonic() < stop:
                    try:
                        got = await client.get(f"/api/v1/submissions/{sid}?wait=30", headers=headers["mal"],
                                               timeout=max(1.0, stop - time.monotonic()))
                        answered.append(got.status_code)
                    except httpx.HTTPError as exc:
                        answered.append(type(exc).__name__)
                        await asyncio.sleep(0.5)

            flood = [asyncio.create_task(poll()) for _ in range(FLOOD)]
            try:
                await asyncio.sleep(5)  # the polls reach the route and wait
                attacked, bad = await _verdict_seconds(client, headers["bob"], 50)
                await asyncio.gather(*flood, return_exceptions=True)  # the flood's own answers, to its end
            finally:
                for task in flood:
                    task.cancel()
            return baseline, attacked, bad, answered

    baseline, attacked, bad, answered = asyncio.run(attack())
    bound = 5 * baseline + 10  # generous: several times slower still passes
    assert attacked <= bound, f"bob's verdict took {attacked:.1f} s under the flood (baseline {baseline:.1f} s), answers {bad}"
    errors = [a for a in bad + answered if isinstance(a, int) and a >= 500]
    assert not errors, f"{len(errors)} requests were answered {sorted(set(errors))}"
