"""Per-job memory and pids cgroups, created and read by the trusted side only.

A child is moved into fresh cgroups right after ``fork`` and before it reads the learner's
code, so the pages it shares with the jail host stay charged to the host and only what the
learner's work touches is counted. The learner cannot reset these counters (writing to
``/proc/self/clear_refs`` resets ``VmHWM`` and ``ru_maxrss``, not a cgroup's peak).

cgroup v1 (``memory.max_usage_in_bytes``) and v2 (``memory.peak``) are both supported. When
neither is writable (an unprivileged container, say) :func:`available` is False and the
runner falls back to ``rusage`` minus the host's resident set, and says so in the result.
"""

from __future__ import annotations

import errno
import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

_ROOT = Path("/sys/fs/cgroup")
#: How long :meth:`JobCgroup.close` keeps trying to remove a cgroup whose last processes are exiting.
CLOSE_SECONDS = 2.0


def _own_path(controller: str | None) -> str:
    """This process's cgroup path for a v1 controller (or v2 when ``controller`` is None)."""
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, names, path = line.split(":", 2)
            if controller is None and names == "":
                return path
            if controller is not None and controller in names.split(","):
                return path
    except OSError:
        pass
    return "/"


def _writable_parent(mount: Path, own: str) -> Path | None:
    """A folder under which we may create cgroups: our own cgroup, else the hierarchy's root."""
    for candidate in (mount / own.lstrip("/"), mount):
        probe = candidate / f"ppo-probe-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        try:
            probe.mkdir()
            probe.rmdir()
            return candidate
        except OSError:
            continue
    return None


@dataclass
class _Layout:
    version: int
    memory_parent: Path
    pids_parent: Path | None
    cpuacct_parent: Path | None = None


def _detect() -> _Layout | None:
    if (_ROOT / "memory" / "memory.max_usage_in_bytes").exists() or (_ROOT / "memory").is_dir():
        mem = _writable_parent(_ROOT / "memory", _own_path("memory"))
        if mem is not None:
            pids = _writable_parent(_ROOT / "pids", _own_path("pids")) if (_ROOT / "pids").is_dir() else None
            cpu = (
                _writable_parent(_ROOT / "cpuacct", _own_path("cpuacct"))
                if (_ROOT / "cpuacct" / "cpuacct.usage").exists()
                else None
            )
            return _Layout(1, mem, pids, cpu)
    if (_ROOT / "cgroup.controllers").exists():
        parent = _writable_parent(_ROOT, _own_path(None))
        if parent is not None and "memory" in (parent / "cgroup.subtree_control").read_text():
            return _Layout(2, parent, parent)
    return None


_LAYOUT: _Layout | bool | None = False


def layout() -> _Layout | None:
    """The cgroup layout this process can use, detected once."""
    global _LAYOUT
    if _LAYOUT is False:
        _LAYOUT = None if os.environ.get("PPO_GRADER_NO_CGROUPS") else _detect()
    return _LAYOUT  # type: ignore[return-value]


def available() -> bool:
    """Whether per-job cgroups can be created here."""
    return layout() is not None


class JobCgroup:
    """Memory (and pids) cgroups for one child, removed by :meth:`close`."""

    def __init__(self, memory_limit: int, max_tasks: int) -> None:
        lay = layout()
        if lay is None:
            raise OSError("cgroups are not available")
        self.version = lay.version
        # The creating process's pid in the name: a process can find the cgroups it left behind.
        name = f"ppo-job-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self.memory = lay.memory_parent / name
        self.memory.mkdir()
        self.pids: Path | None = None
        self.cpuacct: Path | None = None
        if self.version == 1:
            (self.memory / "memory.limit_in_bytes").write_text(str(memory_limit))
            swap = self.memory / "memory.memsw.limit_in_bytes"
            if swap.exists():
                try:
                    swap.write_text(str(memory_limit))
                except OSError:
                    pass
            if lay.pids_parent is not None:
                self.pids = lay.pids_parent / name
                self.pids.mkdir()
                (self.pids / "pids.max").write_text(str(max_tasks))
            if lay.cpuacct_parent is not None:
                self.cpuacct = lay.cpuacct_parent / name
                self.cpuacct.mkdir()
        else:
            (self.memory / "memory.max").write_text(str(memory_limit))
            (self.memory / "memory.swap.max").write_text("0") if (self.memory / "memory.swap.max").exists() else None
            (self.memory / "pids.max").write_text(str(max_tasks))

    def add(self, pid: int) -> None:
        """Move a process (by its pid in this namespace) into the cgroups."""
        for group in (self.memory, self.pids, self.cpuacct):
            if group is not None:
                (group / "cgroup.procs").write_text(str(pid))

    def processes(self) -> list[int]:
        """Pids still in the job's memory cgroup (empty once every process of the job is gone)."""
        try:
            return [int(p) for p in (self.memory / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def cpu_seconds(self) -> float | None:
        """CPU time the job's processes used, counted by the kernel (None where not measured)."""
        try:
            if self.version == 1:
                if self.cpuacct is None:
                    return None
                return int((self.cpuacct / "cpuacct.usage").read_text()) / 1e9
            for line in (self.memory / "cpu.stat").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    return int(value) / 1e6
        except (OSError, ValueError):
            return None
        return None

    def peak_bytes(self) -> int:
        """Peak memory charged to the cgroup since creation."""
        name = "memory.max_usage_in_bytes" if self.version == 1 else "memory.peak"
        return int((self.memory / name).read_text().split()[0])

    def oom_killed(self) -> bool:
        """Whether the kernel's OOM killer ended a task of this cgroup (or the limit was hit)."""
        try:
            if self.version == 1:
                for line in (self.memory / "memory.oom_control").read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "oom_kill" and int(value) > 0:
                        return True
                return int((self.memory / "memory.failcnt").read_text()) > 0
            for line in (self.memory / "memory.events").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key in ("oom_kill", "max") and int(value) > 0:
                    return True
        except OSError:
            pass
        return False

    @property
    def source(self) -> str:
        return f"cgroup-v{self.version}"

    def close(self) -> None:
        """Remove the cgroups. Normally every process of the job is gone by now; after a broken
        job (the host failed mid-job) some may still be there or exiting, and the removal is
        then busy: those are killed and the removal retried for up to :data:`CLOSE_SECONDS`,
        so that no job leaves a cgroup behind."""
        deadline = time.monotonic() + CLOSE_SECONDS
        for path in (self.memory, self.pids, self.cpuacct):
            while path is not None:
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                        break
                    _kill_members(path)
                    time.sleep(0.01)


def _kill_members(path: Path) -> None:
    """SIGKILL every process listed in the cgroup ``path`` (only a job's own processes are there)."""
    try:
        pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
