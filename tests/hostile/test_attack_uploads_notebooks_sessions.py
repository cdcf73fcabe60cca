"""Attacks on uploads, notebooks, sessions and the queue that worked (review 5, red team of
issue 31's acceptance). Each test asserts what should hold; each was ``xfail(strict=True)`` while the
attack worked, and its marker went with the fix (branch uploads-fix): they all pass now.

Most tests drive a real ``ppo-grader serve`` (its own SQLite file, a free port) over HTTP; the
notebook-building ones call the upload route's own ``prepare`` in this process so they can
count the work (``difflib`` matches, cells built). Bounds are counted work, or, for the one
denial of service, a bound against the same server's honest baseline with generous slack.
"""

from __future__ import annotations

import difflib
import html
import json
import os
import random
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from server.dashboard import upload

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]
FUNCTION = "def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):\n    return {}\n"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Learner:
    """A logged-in browser: its client (cookie), the upload form's token and key, its API token."""

    client: httpx.Client
    csrf: str
    key: str
    token: str


@dataclass
class Served:
    """A running ``ppo-grader serve`` and how to reach it."""

    url: str
    port: int
    env: dict[str, str]
    proc: subprocess.Popen[str]
    log: Path
    made: list[httpx.Client] = field(default_factory=list)

    def learner(self, name: str) -> Learner:
        out = subprocess.run(
            [str(BIN / "ppo-grader"), "users", "add", name, "--role", "learner"],
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        token = out.stdout.strip().splitlines()[-1]
        client = httpx.Client(base_url=self.url, timeout=120)
        self.made.append(client)
        assert client.post("/login", data={"token": token}, follow_redirects=False).status_code == 303
        page = client.get(f"/dashboard/learners/{name}").text
        match = re.search(r'action="/dashboard/submit\?csrf=([^"]*)"', page)
        key = re.search(r'name="key" value="([^"]*)"', page)
        assert match and key, page
        return Learner(client, html.unescape(match.group(1)), key.group(1), token)

    def health_seconds(self, timeout: float) -> float | None:
        """Seconds ``/api/v1/health`` took to answer 200, or None when it did not within ``timeout``."""
        start = time.monotonic()
        try:
            ok = httpx.get(f"{self.url}/api/v1/health", timeout=timeout).status_code == 200
        except httpx.HTTPError:
            return None
        return time.monotonic() - start if ok else None


def _serve(tmp: Path) -> Iterator[Served]:
    port = _free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PPO_GRADER_")},
        "PPO_GRADER_DATABASE_URL": f"sqlite:///{tmp}/grader.db",
        "PPO_GRADER_WORKERS": "1",
        "PPO_GRADER_SECRET_KEY": "review5-secret-" + "z" * 32,
        "XDG_CONFIG_HOME": str(tmp / "config"),
        "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "client"), os.environ.get("PYTHONPATH", "")]),
    }
    log = tmp / "server.log"
    with log.open("w+") as err:
        proc = subprocess.Popen(
            [str(BIN / "ppo-grader"), "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
            text=True,
        )
    served = Served(f"http://127.0.0.1:{port}", port, env, proc, log)
    try:
        deadline = time.monotonic() + 120
        while served.health_seconds(2) is None:
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        yield served
    finally:
        for client in served.made:
            client.close()
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from _serve(tmp_path_factory.mktemp("review5"))


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[Served]:
    """A server of its own, for the attack that exhausts it."""
    yield from _serve(tmp_path)


def send(learner: Learner, filename: str, content: bytes, **fields: str) -> httpx.Response:
    return learner.client.post(
        "/dashboard/submit",
        params={"csrf": learner.csrf},
        data=fields,
        files={"file": (filename, content, "application/octet-stream")},
        follow_redirects=False,
    )


def notebook(*cells: str) -> bytes:
    return json.dumps(
        {
            "nbformat": 4,
            "nbformat_minor": 5,
            "metadata": {},
            "cells": [
                {"cell_type": "code", "source": c, "metadata": {}, "outputs": [], "execution_count": None}
                for c in cells
            ],
        }
    ).encode()


def page_text(response: httpx.Response) -> str:
    text = re.sub(r"<style>.*?</style>", " ", response.text, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())


# --------------------------------------------------------------------------- the notebook's module


def test_a_deep_constant_expression_gets_a_page_not_a_500(server: Served) -> None:
    learner = server.learner("deep")
    cells = ("X = " + "+".join(["1"] * 990) + "\n", FUNCTION.format("X"))
    response = send(learner, "deep.ipynb", notebook(*cells))
    assert response.status_code < 500, response.text[:300]
    assert "Traceback" not in server.log.read_text()


def test_a_deep_sum_in_pasted_code_gets_a_page_not_a_500(server: Served) -> None:
    learner = server.learner("pasted")
    source = "x = " + "+".join(["1"] * 3000) + "\n" + FUNCTION.format("0")
    api = httpx.post(
        f"{server.url}/api/v1/submissions",
        json={"exercise": "actor-loss", "source": source},
        headers={"Authorization": f"Bearer {learner.token}"},
        timeout=60,
    )
    assert api.status_code == 202  # the API takes it (and grades it: the jail says what is wrong)
    response = learner.client.post(
        "/dashboard/submit",
        params={"csrf": learner.csrf},
        data={"source": source, "exercise": "actor-loss"},
        files={"file": ("", b"", "application/octet-stream")},
        follow_redirects=False,
    )
    assert response.status_code < 500, response.text[:300]


def _names(count: int, length: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["n" + "".join(rng.choice("ab") for _ in range(length)) for _ in range(count)]


def _prepare_counting(monkeypatch: pytest.MonkeyPatch, cells: list[str]) -> int:
    """``difflib`` longest-match searches made by the upload route's ``prepare`` (which refuses)."""
    calls = {"n": 0}
    real = difflib.SequenceMatcher.find_longest_match

    def counted(self: difflib.SequenceMatcher[str], *args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(difflib.SequenceMatcher, "find_longest_match", counted)
    form = upload.Upload({"exercise": ""}, "typo.ipynb", notebook(*cells))
    with pytest.raises(upload.UploadRefused):
        upload.prepare(form, "/dashboard", max_source_bytes=64 * 1024, visible=None)
    monkeypatch.undo()
    return calls["n"]


def test_the_typo_search_of_a_missing_name_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    names = _names(3 * (60_000 // 194), 190, seed=5)
    defined = ["".join(f"{n} = 0\n" for n in names[i::3]) for i in range(3)]
    honest = _prepare_counting(monkeypatch, [*defined, FUNCTION.format("CLIP_RANGE")])
    attack = _prepare_counting(monkeypatch, [*defined, FUNCTION.format(_names(1, 190, seed=6)[0])])
    assert attack <= 10 * honest + 2_000, f"{attack} difflib matches against {honest} for an honest typo"


def test_the_cell_cap_comes_before_the_cells_are_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """380,000 cells are counted and refused before nbformat reads them or a cell is built."""
    from notebook_format import reader

    built: list[int] = []
    monkeypatch.setattr(reader, "code_cells", lambda nb: built.append(len(nb["cells"])) or [])
    monkeypatch.setattr(reader, "load_nbformat", lambda: pytest.fail("nbformat was asked to read it"))
    body = b'{"cells": [' + b",".join([b'{"cell_type":"code"}'] * 380_000) + b"]}"
    assert len(body) < upload.MAX_UPLOAD_BYTES
    with pytest.raises(upload.UploadRefused) as refused:
        upload.prepare(upload.Upload({}, "many.ipynb", body), "/dashboard", max_source_bytes=64 * 1024, visible=None)
    assert refused.value.status_code == 413 and built == []


# --------------------------------------------------------------------------- limits and the session


def test_replaying_a_key_does_not_buy_unlimited_notebook_builds(server: Served) -> None:
    learner = server.learner("replay")
    assert send(learner, "first.py", FUNCTION.format("0").encode(), key="K1").status_code == 303
    missing = notebook(FUNCTION.format("MISSING_NAME"))
    codes = [send(learner, "again.ipynb", missing, key="K1").status_code for _ in range(35)]
    # the rate limit is 30/minute: past it, a request that still costs a build must be refused
    assert codes.count(400) <= 30, f"{codes.count(400)} notebooks built in a minute, none refused 429"


def test_logging_out_ends_the_session_and_its_form_token(server: Served) -> None:
    learner = server.learner("leaver")
    cookies = dict(learner.client.cookies)
    assert learner.client.post("/logout", follow_redirects=False).status_code in (302, 303)
    with httpx.Client(base_url=server.url, cookies=cookies, timeout=60) as replay:
        response = replay.post(
            "/dashboard/submit",
            params={"csrf": learner.csrf},
            files={"file": ("a.py", FUNCTION.format("0").encode())},
            follow_redirects=False,
        )
    assert response.status_code != 303, "a logged-out session's cookie and form token still submitted"


def test_a_logged_out_cookie_stays_refused_after_the_server_restarts(tmp_path: Path) -> None:
    """A logout is stored in the database (``ended_sessions``, migration 0019_ended_sessions),
    not in the API process's memory: the real server, stopped and started again on the same
    database, still refuses the logged-out cookie and its form token. Another learner's cookie,
    never logged out, still works after the restart: what refuses the first is its logout."""
    first = _serve(tmp_path)
    served = next(first)
    leaver, stayer = served.learner("leaver"), served.learner("stayer")
    left, stayed = dict(leaver.client.cookies), dict(stayer.client.cookies)
    assert leaver.client.post("/logout", follow_redirects=False).status_code in (302, 303)
    first.close()  # stops the server (the generator's finally)
    assert served.proc.poll() is not None
    again = _serve(tmp_path)
    restarted = next(again)
    try:
        with httpx.Client(base_url=restarted.url, cookies=left, timeout=60) as replay:
            page = replay.get("/dashboard/learners/leaver", follow_redirects=False)
            assert "upload-form" not in page.text and "session has ended" in page.text, page.text[:500]
            sent = replay.post(
                "/dashboard/submit",
                params={"csrf": leaver.csrf},
                files={"file": ("a.py", FUNCTION.format("0").encode())},
                follow_redirects=False,
            )
            assert sent.status_code != 303, "a logged-out cookie submitted after a restart"
        with httpx.Client(base_url=restarted.url, cookies=stayed, timeout=60) as kept:
            assert "upload-form" in kept.get("/dashboard/learners/stayer", follow_redirects=False).text
    finally:
        again.close()


def test_the_form_token_is_not_written_to_the_access_log(server: Served) -> None:
    learner = server.learner("logged")
    send(learner, "a.py", FUNCTION.format("0").encode())
    time.sleep(0.5)  # the log line is written after the response
    assert learner.csrf not in server.log.read_text()


# --------------------------------------------------------------------------- denial of service


def _slow_upload(served: Served, learner: Learner) -> socket.socket:
    """A logged-in upload whose headers are all sent and whose body then trickles (here: stops)."""
    cookie = "; ".join(f"{k}={v}" for k, v in learner.client.cookies.items())
    sock = socket.create_connection(("127.0.0.1", served.port))
    sock.sendall(
        (
            f"POST /dashboard/submit?csrf={learner.csrf} HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\n"
            f"Cookie: {cookie}\r\nContent-Type: multipart/form-data; boundary=XX\r\n"
            "Content-Length: 100000\r\n\r\n--XX\r\n"
        ).encode()
    )
    return sock


def test_one_learners_slow_uploads_do_not_freeze_the_api(own_server: Served) -> None:
    mallory, bob = own_server.learner("mallory"), own_server.learner("bob")
    baseline = max(own_server.health_seconds(30) or 30 for _ in range(3))
    bound = 30 * baseline + 3  # generous: an answer an order of magnitude slower still passes
    sockets = [_slow_upload(own_server, mallory) for _ in range(24)]
    try:
        time.sleep(1)  # the requests reach the route and wait for their bodies
        attacked = own_server.health_seconds(bound)
        try:
            page = bob.client.get("/dashboard/learners/bob", timeout=bound).status_code
        except httpx.HTTPError:
            page = None
    finally:
        for sock in sockets:
            sock.close()
    assert attacked is not None, f"/health did not answer within {bound:.1f} s (baseline {baseline:.2f} s)"
    assert page == 200, "another learner's page did not answer"


# --------------------------------------------------------------------------- the fixes' own edges


def _status_line(sock: socket.socket, timeout: float) -> str:
    sock.settimeout(timeout)
    data = b""
    while b"\r\n" not in data:
        got = sock.recv(4096)
        if not got:
            break
        data += got
    return data.split(b"\r\n", 1)[0].decode()


def test_a_third_slow_upload_of_one_learner_is_refused_at_once_and_a_stalled_one_gets_408(server: Served) -> None:
    """Two bodies at a time per learner (429 for the third, before its body is read); a body
    that sends nothing for ``STALL_SECONDS`` is answered 408, not held for ever."""
    learner = server.learner("staller")
    first, second = _slow_upload(server, learner), _slow_upload(server, learner)
    try:
        time.sleep(1)  # both reach the route and hold their slots
        third = _slow_upload(server, learner)
        try:
            assert " 429 " in _status_line(third, 30) + " "
        finally:
            third.close()
        # the stalled ones: refused once no byte came for STALL_SECONDS (generous read timeout)
        assert " 408 " in _status_line(first, upload.STALL_SECONDS + 60) + " "
    finally:
        first.close()
        second.close()
    # slots given back: the learner uploads again
    assert send(learner, "after.py", FUNCTION.format("0").encode()).status_code == 303


def test_a_replay_of_the_same_upload_is_the_stored_submission_and_other_content_is_refused(server: Served) -> None:
    learner = server.learner("retrier")
    body = FUNCTION.format("0").encode()
    first = send(learner, "a.py", body, key="R1")
    again = send(learner, "a.py", body, key="R1")
    assert first.status_code == again.status_code == 303
    assert first.headers["location"] == again.headers["location"]  # one submission
    # other content under the key: refused before it is built (the old code built this
    # notebook and answered 400 for its missing name)
    other = send(learner, "b.ipynb", notebook(FUNCTION.format("MISSING_NAME")), key="R1")
    assert other.status_code == 409 and "already used" in page_text(other)
