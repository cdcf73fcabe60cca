"""Course packs built the way a course author builds them: with the real `ppo-grader` CLI, in a
temporary folder, edited as files; servers and verify runs as real subprocesses."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.cli_forks import run_cli

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[3]
RLOO_PACK = REPO / "examples" / "packs" / "rloo"


@dataclass
class Cli:
    """`ppo-grader` with its own database and pack configuration."""

    env: dict[str, str]

    def __call__(self, *args: str, timeout: float = 300, packs: list[Path] | None = None
                 ) -> subprocess.CompletedProcess[str]:
        env = dict(self.env)
        if packs is not None:
            env["PPO_GRADER_EXERCISE_PACKS"] = os.pathsep.join(str(p) for p in packs)
        # A process of its own per command, forked from one that imported the server once
        # (tests/cli_forks.py): the pack suites run about fifty commands.
        return run_cli(list(args), env, timeout=timeout, script=BIN / "ppo-grader")


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PPO_GRADER_")}
    env.update({"PPO_GRADER_DATABASE_URL": f"sqlite:///{tmp_path}/grader.db",
                "PPO_GRADER_SECRET_KEY": "packs-secret-" + "p" * 32, "PPO_GRADER_WORKERS": "1",
                "XDG_CONFIG_HOME": str(tmp_path / "config")})
    return Cli(env)


def scaffold(cli: Cli, pack: Path, slug: str) -> Path:
    """`ppo-grader exercises new SLUG --pack PACK`; the exercise's folder."""
    done = cli("exercises", "new", slug, "--pack", str(pack))
    assert done.returncode == 0, done.stderr
    return pack / slug.replace("-", "_")


def edit(path: Path, old: str, new: str) -> None:
    """Replace one exact piece of a pack file, as an author's editor would."""
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} not once in {path}"
    path.write_text(text.replace(old, new))


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The single `error:` line a refused command prints (exit 2, no traceback)."""
    assert done.returncode == 2, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    assert "Traceback" not in done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


@dataclass
class Served:
    url: str
    token: str
    cli: Cli

    def add_learner(self, name: str) -> str:
        done = self.cli("users", "add", name, "--role", "learner")
        assert done.returncode == 0, done.stderr
        return done.stdout.strip().splitlines()[-1]

    def submit(self, token: str, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PPO_GRADER_URL": self.url, "PPO_GRADER_TOKEN": token,
               "XDG_CONFIG_HOME": self.cli.env["XDG_CONFIG_HOME"]}
        return subprocess.run([str(BIN / "ppo-submit"), *args], env=env, capture_output=True, text=True, timeout=180)


@pytest.fixture
def serve(cli: Cli, tmp_path: Path) -> Iterator[object]:
    """Start `ppo-grader serve` with the given packs configured: ``serve([pack])`` -> Served."""
    procs: list[subprocess.Popen[str]] = []

    def start(packs: list[Path]) -> Served:
        from tests.e2e.conftest import free_port

        port = free_port()
        env = {**cli.env, "PPO_GRADER_EXERCISE_PACKS": os.pathsep.join(str(p) for p in packs)}
        log = open(tmp_path / "server.log", "w+")
        proc = subprocess.Popen([str(BIN / "ppo-grader"), "serve", "--port", str(port)], env=env,
                                stdout=subprocess.PIPE, stderr=log, text=True)
        procs.append(proc)
        assert proc.stdout is not None
        token = None
        for line in proc.stdout:
            match = re.search(r"Instructor token \(shown once\): (\S+)", line)
            if match:
                token = match.group(1)
                break
        if token is None:
            log.seek(0)
            raise AssertionError(f"server exited: {log.read()[-3000:]}")
        url = f"http://127.0.0.1:{port}"
        for _ in range(600):
            try:
                if httpx.get(f"{url}/api/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        return Served(url, token, Cli(env))

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
