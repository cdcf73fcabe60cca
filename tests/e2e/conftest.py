"""A real `ppo-grader serve` on a free port, with its own SQLite file, for end-to-end tests."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    url: str
    env: dict[str, str]
    instructor_token: str
    proc: subprocess.Popen[str]
    #: The server's log (JSON lines on stderr, uvicorn's access log among them: one line a request).
    log_path: Path | None = None

    def add_user(self, name: str, role: str = "learner") -> str:
        out = subprocess.run([str(BIN / "ppo-grader"), "users", "add", name, "--role", role], env=self.env,
                             capture_output=True, text=True, check=True, timeout=60)
        return out.stdout.strip().splitlines()[-1]

    def submit(self, token: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PPO_GRADER_URL": self.url, "PPO_GRADER_TOKEN": token,
               "XDG_CONFIG_HOME": self.env["XDG_CONFIG_HOME"]}
        return subprocess.run([str(BIN / "ppo-submit"), *args], env=env, capture_output=True, text=True,
                              timeout=timeout)


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("e2e")
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PPO_GRADER_")},
        "PPO_GRADER_DATABASE_URL": f"sqlite:///{tmp}/grader.db",
        "PPO_GRADER_WORKERS": "1",
        "PPO_GRADER_SECRET_KEY": "e2e-secret-" + "z" * 32,
        "XDG_CONFIG_HOME": str(tmp / "config"),
    }
    log = open(tmp / "server.log", "w+")
    proc = subprocess.Popen([str(BIN / "ppo-grader"), "serve", "--port", str(port)], env=env, stdout=subprocess.PIPE,
                            stderr=log, text=True)
    url = f"http://127.0.0.1:{port}"
    token = None
    deadline = time.monotonic() + 120
    assert proc.stdout is not None
    while token is None and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"server exited: {log.read()[-3000:]}")
        match = re.search(r"Instructor token \(shown once\): (\S+)", line)
        if match:
            token = match.group(1)
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/api/v1/health", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.2)
    assert token, "no instructor token printed"
    yield Server(url=url, env=env, instructor_token=token, proc=proc, log_path=tmp / "server.log")
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()
