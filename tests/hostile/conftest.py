"""One real jail for the whole hostile suite: a Judge with tight limits, a canary secret in
the grader's environment, and the bookkeeping the hygiene test needs (processes, markers)."""

from __future__ import annotations

import os
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sandbox.protocol import Arg, Call, JobRequest, JobResult, SandboxLimits
from sandbox.runner import JailConfig, SandboxPool

REPO = Path(__file__).resolve().parents[2]
CANARY_NAME = "PPO_GRADER_SECRET_KEY"
CANARY = "canary-" + uuid.uuid4().hex
#: Every file hostile code tries to leave outside the jail carries this in its name.
MARKER = "ppo-hostile-" + uuid.uuid4().hex[:10]
LIMITS = SandboxLimits(cpu_seconds=2, wall_seconds=3, memory_bytes=512 << 20, output_bytes=8 << 20,
                       tmp_bytes=64 << 20)


def _proc_table() -> dict[int, tuple[int, int, str]]:
    """pid -> (ppid, session id, cmdline) for every process we can read."""
    table: dict[int, tuple[int, int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError):
            continue
        table[int(entry.name)] = (int(fields[1]), int(fields[3]), cmd)
    return table


def descendants(root: int, table: dict[int, tuple[int, int, str]]) -> set[int]:
    """Every process below ``root`` in ``table``."""
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, (ppid, _, _) in table.items() if ppid in frontier} - found
        found |= frontier
    return found


@dataclass
class Jail:
    """The shared judge and what the hygiene test compares against."""

    judge: object
    processes_before: dict[int, tuple[int, int, str]]
    descendants_before: set[int]
    tmp_before: set[str]
    started: float
    sessions: set[int] = field(default_factory=set)

    def track_hosts(self) -> None:
        """Remember every jail host's session ids (hosts are replaced when they break)."""
        for pool in self.judge.pools.sandbox_pools():  # type: ignore[attr-defined]
            for host in getattr(pool, "_hosts", []):
                if host.proc is not None:
                    self.sessions.add(host.proc.pid)
                if host.outer_pid:
                    self.sessions.add(host.outer_pid)


@pytest.fixture(scope="package")  # the canary below must not outlive this package
def jail() -> Iterator[Jail]:
    assert shutil.which("bwrap"), "bubblewrap is required: apt-get install bubblewrap"
    from exercises.judge import Judge

    table = _proc_table()
    before = Jail(judge=None, processes_before=table, descendants_before=descendants(os.getpid(), table),
                  tmp_before=set(os.listdir("/tmp")), started=time.time())
    old = os.environ.get(CANARY_NAME)
    os.environ[CANARY_NAME] = CANARY  # must never reach the jail
    before.judge = Judge(secret=b"hostile-suite-secret", limits=LIMITS, pool_size=1)
    try:
        yield before
    finally:
        before.judge.close()  # type: ignore[attr-defined]
        if old is None:
            os.environ.pop(CANARY_NAME, None)
        else:
            os.environ[CANARY_NAME] = old


@pytest.fixture(autouse=True)
def _track_hosts(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "jail" in request.fixturenames:
        request.getfixturevalue("jail").track_hosts()


def two_jail_hosts(limits: SandboxLimits) -> Iterator[SandboxPool]:
    """Two warm jail hosts under ``limits``, for jobs that run at once; closed when the
    (module-scoped) fixture that yields from this ends."""
    p = SandboxPool(2, JailConfig(limits=limits))
    try:
        yield p
    finally:
        p.close()


def run_f(pool: SandboxPool, source: str) -> JobResult:
    """One job of ``source`` on ``pool``: a call of its ``f(1)``."""
    return pool.run(JobRequest(source=source, function="f", calls=[Call(id="1", args=[Arg(value=1)])]), {})


def run_at_once(pool: SandboxPool, *sources: str) -> list[JobResult]:
    """A job of each of ``sources``, started together (one thread each) on ``pool``'s hosts."""
    results: list[Any] = [None] * len(sources)

    def run(i: int) -> None:
        results[i] = run_f(pool, sources[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(sources))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results
