"""Issue 38: SIGTERM under load. A real ``ppo-grader serve`` (embedded SQLite, the real jail),
with many long polls open, one submission grading in the jail and others queued: every poll
ends with a complete, retryable answer (503 ``ShuttingDown`` with ``Retry-After``), the process
exits with code 0 within 10 s, and after a restart every submission has exactly one verdict,
the interrupted one included. A real ``ppo-submit`` waiting through it prints its verdict."""

from __future__ import annotations

import asyncio
import json
import os
import re
import resource
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import httpx
import pytest

from exercises.registry import get_exercise
from tests.e2e.conftest import BIN, free_port

pytestmark = pytest.mark.slow

#: Long polls open at SIGTERM (the issue's load test had 1,000 clients).
POLLS = 1000
#: The exit bound the issue asks for (SHUTDOWN_GRACE_SECONDS is 3: about 6 s at worst).
EXIT_BOUND_SECONDS = 10.0
#: The jailed submission sleeps at import until this long after it was sent: in the jail at
#: SIGTERM however slow the setup, and graded soon after the restart.
HOLD_SECONDS = 60.0
#: Generous: the machine may be loaded by other work.
START_TIMEOUT = 180.0


@dataclass
class Serve:
    """One ``ppo-grader serve`` process on ``port``; its stderr goes to ``log``."""

    proc: subprocess.Popen[str]
    log: IO[str]
    token: str | None = None
    lines: list[str] = field(default_factory=list)


def start(env: dict[str, str], port: int, log_path: Path) -> Serve:
    log = open(log_path, "w+")
    proc = subprocess.Popen(
        [str(BIN / "ppo-grader"), "serve", "--port", str(port)], env=env, stdout=subprocess.PIPE, stderr=log, text=True
    )
    return Serve(proc, log)


def wait_started(serve: Serve, url: str, first: bool) -> None:
    """Until /health answers (and, on the first start, the instructor token was printed)."""
    deadline = time.monotonic() + START_TIMEOUT
    assert serve.proc.stdout is not None
    while first and serve.token is None and time.monotonic() < deadline:
        line = serve.proc.stdout.readline()
        if not line and serve.proc.poll() is not None:
            serve.log.seek(0)
            raise RuntimeError(f"server exited: {serve.log.read()[-3000:]}")
        match = re.search(r"Instructor token \(shown once\): (\S+)", line)
        if match:
            serve.token = match.group(1)
    while time.monotonic() < deadline:
        assert serve.proc.poll() is None, "the server exited while starting"
        try:
            if httpx.get(f"{url}/api/v1/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError("the server did not start")


def waiting_polls(url: str) -> int:
    """The server's own count of long polls waiting (``/metrics``, read from loopback)."""
    body = httpx.get(f"{url}/metrics", timeout=30).text
    match = re.search(r"^ppo_grader_long_polls_waiting (\S+)$", body, re.MULTILINE)
    assert match, "no ppo_grader_long_polls_waiting on /metrics"
    return int(float(match.group(1)))


def rows(db: Path) -> list[tuple[int, str, str | None, float | None, int, int]]:
    """(id, status, verdict, score, attempts, check results) of every submission."""
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT s.id, s.status, s.verdict, s.score, s.attempts,"
            " (SELECT count(*) FROM check_results c WHERE c.submission_id = s.id)"
            " FROM submissions s ORDER BY s.id"
        ).fetchall()


async def long_poll(port: int, token: str, submission_id: int) -> tuple[int, str | None, str | None]:
    """One long poll over a socket of its own, read to the server's close: (status,
    Retry-After, error name). Raw HTTP/1.1, so that a thousand cost this process little."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        f"GET /api/v1/submissions/{submission_id}?wait=30 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {token}\r\nConnection: close\r\n\r\n".encode()
    )
    await writer.drain()
    raw = await reader.read()  # until the server closes the connection
    writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = dict((k.strip().lower(), v.strip()) for k, v in (line.split(":", 1) for line in header_lines))
    assert int(headers["content-length"]) == len(body), "an incomplete answer"
    return int(status_line.split()[1]), headers.get("retry-after"), json.loads(body).get("error")


def exit_clock(proc: subprocess.Popen[str]) -> Callable[[], float]:
    """Start timing ``proc``'s exit from a thread of its own (this process's event loop is busy
    reading the answers); returns a function that waits and gives the monotonic exit time."""
    exited: list[float] = []

    def wait() -> None:
        proc.wait()
        exited.append(time.monotonic())

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()

    def when() -> float:
        thread.join(60)
        assert exited, "the server did not exit within 60 s"
        return exited[0]

    return when


async def sigterm_under_polls(
    port: int, token: str, ids: list[int], proc: subprocess.Popen[str]
) -> tuple[list[object], float]:
    """Open ``POLLS`` long polls over ``ids``, SIGTERM once the server counts them all waiting;
    returns every poll's outcome and the seconds from SIGTERM to the process's exit."""
    url = f"http://127.0.0.1:{port}"
    polls = [asyncio.create_task(long_poll(port, token, ids[i % len(ids)])) for i in range(POLLS)]
    deadline = time.monotonic() + 25  # the polls wait 30 s: all must still be waiting at SIGTERM
    while (waiting := await asyncio.to_thread(waiting_polls, url)) < POLLS:
        assert time.monotonic() < deadline, f"only {waiting} of {POLLS} long polls got to wait"
        assert not any(p.done() for p in polls), "a long poll ended before SIGTERM"
        await asyncio.sleep(0.5)
    exited = exit_clock(proc)
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    outcomes = await asyncio.gather(*polls, return_exceptions=True)
    return list(outcomes), await asyncio.to_thread(exited) - sent


def test_sigterm_with_1000_long_polls_answers_all_exits_0_within_10s_and_loses_no_submission(tmp_path: Path) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = 2 * POLLS + 512  # this process's sockets and the server's (it inherits the limit)
    if soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(needed, hard), hard))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    db = tmp_path / "grader.db"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PPO_GRADER_")},
        "PPO_GRADER_DATABASE_URL": f"sqlite:///{db}",
        "PPO_GRADER_WORKERS": "1",  # one job in the jail, the others queued behind it
        # every poll waits, and the ppo-submit runs of the same learner too (the default cap is 4)
        "PPO_GRADER_MAX_LONG_POLLS_PER_USER": str(POLLS + 10),
        "PPO_GRADER_WALL_SECONDS": str(HOLD_SECONDS + 30),
        "PPO_GRADER_SECRET_KEY": "e2e-secret-" + "s" * 32,
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    first = start(env, port, tmp_path / "first.log")
    second: Serve | None = None
    submitter: subprocess.Popen[str] | None = None
    try:
        wait_started(first, url, first=True)
        added = subprocess.run(
            [str(BIN / "ppo-grader"), "users", "add", "ada", "--role", "learner"],
            env=env, capture_output=True, text=True, check=True, timeout=120,
        )  # fmt: skip
        learner = added.stdout.strip().splitlines()[-1]
        reference = get_exercise("actor-loss").reference_source
        # Sleeps at import, in the jail, until well after the SIGTERM; graded soon after the restart.
        until = time.time() + HOLD_SECONDS
        jailed = reference + f"\nimport time as _t\n\n_t.sleep(max(0.0, {until!r} - _t.time()))\n"
        sources = [jailed] + [reference + f"\n# queued {i}\n" for i in range(3)]
        api = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {learner}"}, timeout=60)
        ids = []
        for source in sources:
            created = api.post("/api/v1/submissions", json={"exercise": "actor-loss", "source": source})
            assert created.status_code == 202, created.text
            ids.append(created.json()["id"])
        deadline = time.monotonic() + 60
        while api.get(f"/api/v1/submissions/{ids[0]}").json()["status"] != "running":
            assert time.monotonic() < deadline, "the first submission was never claimed"
            time.sleep(0.2)
        # The real client, waiting on its own long poll: it must ride out the restart.
        solution = tmp_path / "solution.py"
        solution.write_text(reference)
        client_env = {**env, "PPO_GRADER_URL": url, "PPO_GRADER_TOKEN": learner}
        submitter = subprocess.Popen(
            [str(BIN / "ppo-submit"), str(solution), "--json", "--timeout", "300"],
            env=client_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while len(rows(db)) < len(sources) + 1:
            assert submitter.poll() is None and time.monotonic() < deadline, "ppo-submit did not submit"
            time.sleep(0.2)
        api.close()
        assert [r[1] for r in rows(db)] == ["running"] + ["queued"] * 4

        load_before = os.getloadavg()[0]
        outcomes, took = asyncio.run(sigterm_under_polls(port, learner, ids, first.proc))
        answers = [o for o in outcomes if isinstance(o, tuple)]
        failures = [repr(o) for o in outcomes if not isinstance(o, tuple)]
        assert failures == [], f"{len(failures)} long polls got no complete answer, e.g. {failures[:3]}"
        assert answers.count((503, "1", "ShuttingDown")) == POLLS, sorted(set(answers))
        assert first.proc.returncode == 0
        assert took < EXIT_BOUND_SECONDS, f"exited {took:.1f} s after SIGTERM"
        print(f"\n{POLLS} long polls: exit {took:.2f} s after SIGTERM (load average {load_before:.2f})")
        first.log.seek(0)
        first_log = first.log.read()
        assert re.search(rf"went back to the queue: \[{ids[0]}\]", first_log), first_log[-3000:]
        assert [r[1] for r in rows(db)] == ["queued"] * 5  # the interrupted one included
        assert rows(db)[0][4] == 0  # and its interrupted attempt not counted

        second = start(env, port, tmp_path / "second.log")
        wait_started(second, url, first=False)
        out, err = submitter.communicate(timeout=HOLD_SECONDS + 240)
        assert submitter.returncode == 0, err
        assert "error" not in err.lower(), err
        shown = json.loads(out)
        assert (shown["status"], shown["verdict"], shown["score"]) == ("done", "graded", 100)
        deadline = time.monotonic() + HOLD_SECONDS + 240
        while any(r[1] != "done" for r in rows(db)):
            assert time.monotonic() < deadline, rows(db)
            time.sleep(0.5)
        final = rows(db)
        assert len(final) == len(sources) + 1  # none lost, none made twice
        assert {(r[1], r[2], r[3], r[4]) for r in final} == {("done", "graded", 100.0, 1)}
        checks = {r[5] for r in final}
        assert len(checks) == 1 and checks.pop() > 0  # one set of check results each
    finally:
        for serve in (first, second):
            if serve is not None:
                if serve.proc.poll() is None:
                    serve.proc.terminate()
                    try:
                        serve.proc.wait(30)
                    except subprocess.TimeoutExpired:
                        serve.proc.kill()
                serve.log.close()
        if submitter is not None and submitter.poll() is None:
            submitter.kill()
