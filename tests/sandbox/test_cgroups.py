"""sandbox.cgroups: per-job cgroups made for real (skipped where this machine has none writable):
the limit files hold what was asked, a real child is counted, limited and OOM-killed, and
closing leaves nothing behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import cgroups

REPO = Path(__file__).resolve().parents[2]
MiB = 1 << 20

needs_cgroups = pytest.mark.skipif(not cgroups.available(), reason="no writable cgroup hierarchy here")


@pytest.fixture
def group() -> Iterator[cgroups.JobCgroup]:
    g = cgroups.JobCgroup(64 * MiB, 8)
    yield g
    g.close()


class Child:
    """A Python child that waits for a line on stdin, then runs ``code`` (so it can be moved into
    the cgroup first: only what it does after the move is charged there)."""

    def __init__(self, code: str) -> None:
        script = f"import sys\nsys.stdin.readline()\n{code}\n"
        self.proc = subprocess.Popen([sys.executable, "-I", "-c", script], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def go(self) -> tuple[int, str]:
        out, _ = self.proc.communicate("go\n", timeout=60)
        return self.proc.returncode, out


@needs_cgroups
def test_the_limit_files_hold_what_was_asked(group: cgroups.JobCgroup) -> None:
    assert group.memory.is_dir() and group.memory.name.startswith(f"ppo-job-{os.getpid()}-")
    if group.version == 1:
        assert int((group.memory / "memory.limit_in_bytes").read_text()) == 64 * MiB
        swap = group.memory / "memory.memsw.limit_in_bytes"
        if swap.exists():
            assert int(swap.read_text()) == 64 * MiB
        if group.pids is not None:
            assert (group.pids / "pids.max").read_text().strip() == "8"
    else:
        assert int((group.memory / "memory.max").read_text()) == 64 * MiB
        assert (group.memory / "pids.max").read_text().strip() == "8"
    assert group.source == f"cgroup-v{group.version}"
    assert group.processes() == [] and not group.oom_killed()


@needs_cgroups
def test_a_child_is_counted_and_its_peak_is_what_it_touched(group: cgroups.JobCgroup) -> None:
    child = Child("block = bytearray(b'\\x01') * (32 << 20)\nprint(len(block))")
    group.add(child.proc.pid)
    assert group.processes() == [child.proc.pid]
    code, out = child.go()
    assert code == 0 and out.strip() == str(32 * MiB)
    assert group.processes() == []
    peak = group.peak_bytes()
    assert 32 * MiB <= peak < 64 * MiB, peak >> 20
    cpu = group.cpu_seconds()
    assert group.version == 1 and group.cpuacct is None or (cpu is not None and cpu > 0)
    assert not group.oom_killed()


@needs_cgroups
def test_a_child_over_the_memory_limit_is_killed_and_the_cgroup_says_so(group: cgroups.JobCgroup) -> None:
    child = Child("block = bytearray(b'\\x01') * (256 << 20)\nprint('survived')")
    group.add(child.proc.pid)
    code, out = child.go()
    assert code == -9 and "survived" not in out
    assert group.oom_killed() and group.peak_bytes() <= 64 * MiB


@needs_cgroups
def test_the_task_limit_stops_threads_past_it() -> None:
    group = cgroups.JobCgroup(256 * MiB, 4)
    try:
        if group.version == 1 and group.pids is None:
            pytest.skip("no pids controller here")
        child = Child(
            "import threading\nstop = threading.Event()\nstarted = 0\n"
            "try:\n    for _ in range(20):\n        threading.Thread(target=stop.wait).start()\n        started += 1\n"
            "except RuntimeError:\n    pass\nprint(started)\nstop.set()"
        )
        group.add(child.proc.pid)
        code, out = child.go()
        assert code == 0 and int(out) == 3  # the main thread and three more: four tasks
    finally:
        group.close()


@needs_cgroups
def test_close_removes_every_folder_it_made() -> None:
    group = cgroups.JobCgroup(16 * MiB, 2)
    folders = [p for p in (group.memory, group.pids, group.cpuacct) if p is not None]
    assert all(p.is_dir() for p in folders)
    group.close()
    assert not any(p.exists() for p in folders)
    group.close()  # twice is harmless


@needs_cgroups
def test_close_removes_a_cgroup_a_process_is_still_in_and_kills_it() -> None:
    """After a broken job a process may still be in the job's cgroups when they are closed: the
    removal is busy then, so close kills what is there and removes them anyway (none leaks)."""
    group = cgroups.JobCgroup(16 * MiB, 4)
    folders = [p for p in (group.memory, group.pids, group.cpuacct) if p is not None]
    straggler = subprocess.Popen(["sleep", "600"])
    reaper = threading.Thread(target=straggler.wait)
    reaper.start()
    try:
        group.add(straggler.pid)
        assert group.processes() == [straggler.pid]
        group.close()
        reaper.join(timeout=10)
        assert straggler.returncode == -signal.SIGKILL
        assert not any(p.exists() for p in folders)
    finally:
        if straggler.poll() is None:
            straggler.kill()
        reaper.join(timeout=10)


def test_the_switch_turns_cgroups_off_and_a_job_cgroup_is_then_refused() -> None:
    script = ("import sys\nsys.path.insert(0, %r)\nfrom sandbox import cgroups\nprint(cgroups.available())\n"
              "try:\n    cgroups.JobCgroup(1 << 20, 1)\nexcept OSError as exc:\n    print(exc)\n") % str(REPO)
    run = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PPO_GRADER_NO_CGROUPS": "1"})
    assert run.stdout.splitlines() == ["False", "cgroups are not available"], run.stderr


def test_the_layout_is_detected_once() -> None:
    assert cgroups.layout() is cgroups.layout()
