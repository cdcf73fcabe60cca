"""Copies of this checkout, each an installation of its own, and servers started from them,
for the issue 32 tests: with the real CLI (``python -m server.cli serve``), or as the README says,
with the copy's own ``scripts/serve`` and its ``.venv/bin/ppo-grader``.

A copy's ``.venv`` is made by :func:`install_venv` as ``scripts/bootstrap`` leaves one: a real
virtual environment in which this copy's code is installed in place (what ``pip install -e``
does) and that ``bootstrap`` finds up to date, so ``scripts/serve`` runs whole (bubblewrap
check, venv, stamp, ``exec .venv/bin/ppo-grader serve``) without downloading anything: the
runtime's packages (torch, fastapi...) are those of the environment running the tests.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
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
#: What an installation needs to serve, and what ``scripts/serve`` reads to start it.
_TREE = (
    "server", "exercises", "sandbox", "client", "pyproject.toml", "constraints.txt",
    "scripts/serve", "scripts/bootstrap",
)
TOKEN = re.compile(r"Instructor token \(shown once\): (\S+)")
#: ``scripts/bootstrap``'s record that .venv holds what these files ask for.
STAMP = ".venv/.ppo-grader-installed"
_STAMPED = ("pyproject.toml", "client/pyproject.toml", "constraints.txt")


def copy_checkout(target: Path) -> Path:
    """A copy of this checkout's code at ``target`` (no data, no caches, no venv)."""
    target.mkdir(parents=True)
    for name in _TREE:
        source = REPO / name
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, target / name)  # scripts keep their executable bit
    return target


def install_venv(checkout: Path) -> Path:
    """``checkout/.venv`` as ``scripts/bootstrap`` leaves it, made without the network: a venv of
    the base interpreter whose path holds the copy (installed in place, as ``pip install -e .``
    and ``-e ./client`` do) and then this environment's packages; the ``ppo-grader`` script pip
    writes; bootstrap's stamp over the files it hashes. Returns the venv's ``ppo-grader``."""
    venv = checkout / ".venv"
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout.strip()
    runtime = sorted({p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()})
    (Path(site) / "ppo_grader_checkout.pth").write_text(
        "\n".join([str(checkout), str(checkout / "client"), *runtime]) + "\n"
    )
    script = venv / "bin" / "ppo-grader"
    script.write_text(
        f"#!{python}\nimport sys\nfrom server.cli import app\nif __name__ == '__main__':\n    sys.exit(app())\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    # bootstrap: `cat pyproject.toml client/pyproject.toml constraints.txt | sha256sum | cut -c1-16`
    digest = hashlib.sha256(b"".join((checkout / name).read_bytes() for name in _STAMPED)).hexdigest()[:16]
    (checkout / STAMP).write_text(digest + "\n")
    return script


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment a shell on this machine has: no PPO_GRADER_* variable, no PYTHONPATH
    (an installation's own .venv finds its code), its own home."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PPO_GRADER_") and k != "PYTHONPATH"}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    env.update(PPO_GRADER_WORKERS="1", PPO_GRADER_SECRET_KEY="installations-" + "s" * 32)
    env.update(extra)
    return env


def cli(checkout: Path, env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``.venv/bin/ppo-grader ARGS`` of the installation ``checkout`` (as the README runs it), from ``cwd``."""
    return subprocess.run(
        [str(checkout / ".venv" / "bin" / "ppo-grader"), *args],
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
def serve(
    checkout: Path, env: dict[str, str], cwd: Path, *args: str, timeout: float = 120, script: bool = False
) -> Iterator[Started]:
    """Run ``ppo-grader serve`` of ``checkout`` from ``cwd`` until healthy; stop it afterwards.
    With ``script``, the checkout's own ``scripts/serve`` (its .venv: :func:`install_venv`)."""
    port = free_port()
    log = cwd / f"serve-{port}.log"
    command = [str(checkout / "scripts" / "serve")] if script else [sys.executable, "-m", "server.cli", "serve"]
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [*command, "--port", str(port), *args],
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
