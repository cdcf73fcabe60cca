"""Two courses' HTML boards through the real server: `ppo-grader serve`, the real jail and judge,
the real `ppo-submit`, and the instructor's browser session over HTTP. Each course's
``/leaderboard?course=`` ranks its own learners, with the scores the API gives for that course."""

from __future__ import annotations

import json
import re
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from exercises.registry import get_exercise
from server.users.service import FIRST_INSTRUCTOR_NAME
from tests.e2e.conftest import BIN, Server

pytestmark = pytest.mark.slow

ROW = re.compile(r'<td class="login">([^<]*)</td>.*?<td class="num score">([^<]*)</td>', re.S)


def ppo_grader(server: Server, *args: str) -> str:
    done = subprocess.run([str(BIN / "ppo-grader"), *args], env=server.env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def board(client: httpx.Client, course: str) -> list[tuple[str, float]]:
    """(login, best score) of each row of one course's HTML board for actor-loss."""
    page = client.get("/leaderboard", params={"course": course, "exercise": "actor-loss"})
    assert page.status_code == 200 and 'id="board"' in page.text, page.text[:500]
    return [(login, float(score)) for login, score in ROW.findall(page.text)]


def api_board(server: Server, course: str) -> list[tuple[str, float]]:
    body = httpx.get(f"{server.url}/api/v1/leaderboard", params={"course": course, "exercise": "actor-loss"},
                     headers={"Authorization": f"Bearer {server.instructor_token}"}, timeout=30).json()
    return [(e["name"], e["board_score"]) for e in body["entries"]]


def test_two_courses_boards_differ(server: Server, tmp_path: Path) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    exercise = get_exercise("actor-loss")
    wrong = next(m for m in exercise.mistakes if m.key == "max-for-min").source(exercise.function_name)
    sources = {"right.py": exercise.reference_source, "wrong.py": wrong}
    for name, text in sources.items():
        (tmp_path / name).write_text(text)
    plan = {"board-a": [("bda-ann", "right.py"), ("bda-cid", "wrong.py")], "board-b": [("bdb-bob", "wrong.py")]}

    scores: dict[str, float] = {}
    for course, learners in plan.items():
        ppo_grader(server, "courses", "create", course, "--instructor", FIRST_INSTRUCTOR_NAME)
        ppo_grader(server, "sets", "publish", course, "actor-loss", "--release", (now - timedelta(days=1)).isoformat(),
                   "--due", (now + timedelta(days=7)).isoformat())
        roster = tmp_path / f"{course}.csv"
        roster.write_text("name,display_name\n" + "".join(f"{login},{login.title()}\n" for login, _ in learners))
        tokens = {line.split(",")[0]: line.split(",")[-1] for line in ppo_grader(server, "courses", "enroll", course, str(roster)).splitlines()[1:]}
        for login, file in learners:
            sent = server.submit(tokens[login], str(tmp_path / file), "--json", "--yes", timeout=300)
            result = json.loads(sent.stdout)
            assert (result["course"], result["verdict"]) == (course, "graded"), sent.stderr
            scores[login] = result["score"]
    assert scores["bda-ann"] == 100 and scores["bda-cid"] < 100 and scores["bdb-bob"] < 100

    with httpx.Client(base_url=server.url, timeout=30) as client:
        login = client.post("/login", data={"token": server.instructor_token})
        assert login.status_code == 303 and login.headers["location"] == "/dashboard"  # the session cookie is kept
        boards = {course: board(client, course) for course in plan}
        default = board(client, "default")

    assert boards["board-a"] == [("bda-ann", 100.0), ("bda-cid", scores["bda-cid"])]
    assert boards["board-b"] == [("bdb-bob", scores["bdb-bob"])]
    assert boards["board-a"] != boards["board-b"]
    assert not {login for login, _ in default} & set(scores)  # enrolled elsewhere: not on the default board
    for course, rows in boards.items():  # the page ranks what the API ranks for that course
        assert rows == [(name, pytest.approx(score)) for name, score in api_board(server, course)]
