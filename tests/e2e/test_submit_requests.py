"""Issue 38, one request per submit, counted against the real server: the requests one
`ppo-submit FILE` makes, read from the server's access log (one line a request), for a file
matched with and without a kept catalogue, with `--exercise`, and past the due date with
"Send it late?" answered yes. The client before issue 38 made 4-5 (catalogue, courses, the
course's windows, the POST, the wait): bench/submit_requests.py shows both side by side."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from exercises.registry import get_exercise
from tests.e2e.conftest import BIN

pytestmark = pytest.mark.slow

#: The long poll the submit asks its POST for (ppo_submit.api.LONG_POLL_SECONDS).
POST_WAIT = 5.0


def _requests(server) -> list[str]:  # type: ignore[no-untyped-def]
    """``METHOD path`` (query left off) of every request the server has logged."""
    found = []
    for line in server.log_path.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        match = re.search(r'"([A-Z]+) ([^ ?]+)\S* HTTP', str(entry.get("msg", "")))
        if entry.get("logger") == "uvicorn.access" and match:
            found.append(f"{match[1]} {match[2]}")
    return found


def _counted(server, token: str, config: Path, *args: str, answer: str = ""):  # type: ignore[no-untyped-def]
    """Run `ppo-submit ARGS` with its own config dir; (the finished process, its requests)."""
    env = {**os.environ, "PPO_GRADER_URL": server.url, "PPO_GRADER_TOKEN": token, "XDG_CONFIG_HOME": str(config)}
    before = len(_requests(server))
    done = subprocess.run([str(BIN / "ppo-submit"), *args], env=env, capture_output=True, text=True, timeout=180,
                          input=answer)
    time.sleep(0.2)  # the last request's line is written as its answer starts: before the client exits
    return done, _requests(server)[before:]


def _polls_beyond_the_post(result: dict) -> bool:
    """Whether the verdict took longer than the POST's own wait (then the client asks the wait
    endpoint, and a third request is right)."""
    created = datetime.fromisoformat(result["created_at"])
    finished = datetime.fromisoformat(result["finished_at"])
    return (finished - created).total_seconds() >= POST_WAIT - 0.5


def _expect(requests: list[str], first: list[str], result: dict) -> None:
    assert requests[: len(first)] == first, requests
    rest = requests[len(first):]
    assert not rest or (_polls_beyond_the_post(result) and all(r.startswith("GET /api/v1/submissions/") for r in rest)), requests


SUBMIT = "POST /api/v1/submissions"
CATALOGUE = "GET /api/v1/exercises"


def test_one_submit_is_one_or_two_requests(server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    token = server.add_user("counted")
    solution = tmp_path / "solution.py"
    solution.write_text(get_exercise("actor-loss").reference_source)
    config = tmp_path / "config"

    cold, requests = _counted(server, token, config, str(solution), "--json")
    assert cold.returncode == 0, cold.stderr
    result = json.loads(cold.stdout)
    assert (result["exercise"], result["status"], result["score"]) == ("actor-loss", "done", 100)
    _expect(requests, [CATALOGUE, SUBMIT], result)  # no catalogue kept yet: read once, kept

    warm, requests = _counted(server, token, config, str(solution), "--json")
    assert warm.returncode == 0, warm.stderr
    _expect(requests, [SUBMIT], json.loads(warm.stdout))  # matched in the kept catalogue

    named, requests = _counted(server, token, tmp_path / "other-config", str(solution), "--exercise", "actor-loss")
    assert named.returncode == 0, named.stderr
    assert "100" in named.stdout
    assert requests[0] == SUBMIT and all(r.startswith("GET /api/v1/submissions/") for r in requests[1:]), requests


def _ppo_grader(server, *args: str) -> str:  # type: ignore[no-untyped-def]
    done = subprocess.run([str(BIN / "ppo-grader"), *args], env=server.env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_late_submit_answered_yes_is_two_requests(server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    now = datetime.now(UTC).replace(microsecond=0)
    _ppo_grader(server, "courses", "create", "e2e-counted", "--time-zone", "UTC")
    roster = tmp_path / "roster.csv"
    roster.write_text("name\nlate-learner\n")
    token = _ppo_grader(server, "courses", "enroll", "e2e-counted", str(roster)).splitlines()[1].split(",")[-1]
    _ppo_grader(server, "sets", "publish", "e2e-counted", "actor-loss", "--release", (now - timedelta(days=2)).isoformat(),
                "--due", (now - timedelta(hours=1)).isoformat(), "--close", (now + timedelta(days=1)).isoformat(),
                "--penalty", "10", "--per", "day")
    solution = tmp_path / "solution.py"
    solution.write_text(get_exercise("actor-loss").reference_source)
    config = tmp_path / "config"

    refused, requests = _counted(server, token, config, str(solution), answer="n\n")
    assert refused.returncode == 2
    assert "warning:" in refused.stderr and "was due" in refused.stderr and "Send it late?" in refused.stderr
    assert "not sent (late)" in refused.stderr
    assert requests == [CATALOGUE, SUBMIT], requests  # the 409 stored nothing

    sent, requests = _counted(server, token, config, str(solution), "--json", answer="y\n")
    assert sent.returncode == 0, sent.stderr
    assert "warning:" in sent.stderr and "Send it late?" in sent.stderr
    result = json.loads(sent.stdout)
    assert (result["late"], result["score"], result["counted_score"]) == (True, 100, 90)
    _expect(requests, [SUBMIT, SUBMIT], result)  # asked (409 with the window), then sent
