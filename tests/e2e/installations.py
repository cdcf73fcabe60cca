"""Copies of this checkout, each an installation of its own, and servers started from them
with the real CLI (``python -m server.cli serve``), for the issue 32 tests."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.e2e.conftest import free_port

REPO = Path(__file__).resolve().parents[2]
#: What an installation needs to serve (the venv is the shared one): the server's packages, and
#: the notebook parser it ships from beside the client (pyproject.toml: client/notebook_format).
_TREE = ("server", "exercises", "sandbox", "client/notebook_format", "pyproject.toml")
TOKEN = re.compile(r"Instructor token \(shown once\): (\S+)")


def copy_checkout(target: Path) -> Path:
    """A copy of this checkout's code at ``target`` (no data, no caches)."""
    target.mkdir(parents=True)
    for name in _TREE:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, target / name)
    return target


def clean_env(home: Path, checkout: Path, **extra: str) -> dict[str, str]:
    """The environment a shell on this machine has: no PPO_GRADER_* variable, its own home."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PPO_GRADER_")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), PYTHONPATH=f"{checkout}{os.pathsep}{checkout / 'client'}")
    env.update(PPO_GRADER_WORKERS="1", PPO_GRADER_SECRET_KEY="installations-" + "s" * 32)
    env.update(extra)
    return env


def cli(checkout: Path, env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``ppo-grader ARGS`` of the installation ``checkout``, run from ``cwd``."""
    return subprocess.run(
        [sys.executable, "-m", "server.cli", *args],
        env=env, cwd=cwd, capture_output=True, text=True, timeout=180,
    )


@dataclass
class Started:
    url: str
    lines: list[str]
    log: Path

    @property
    def token(self) -> str | None:
        """The instructor token it printed (first start only)."""
        found = TOKEN.findall("".join(self.lines))
        return found[0] if found else None

    @property
    def stderr(self) -> str:
        return self.log.read_text()


@contextmanager
def serve(checkout: Path, env: dict[str, str], cwd: Path, *args: str, timeout: float = 120) -> Iterator[Started]:
    """Run ``ppo-grader serve`` of ``checkout`` from ``cwd`` until healthy; stop it afterwards."""
    port = free_port()
    log = cwd / f"serve-{port}.log"
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "server.cli", "serve", "--port", str(port), *args],
            env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=err, text=True,
        )
    lines: list[str] = []
    assert proc.stdout is not None
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)  # type: ignore[union-attr]
    reader.start()
    started = Started(f"http://127.0.0.1:{port}", lines, log)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server did not start: {log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{started.url}/api/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        yield started
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        reader.join(5)
