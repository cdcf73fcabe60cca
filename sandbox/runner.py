"""The trusted side of the jail: start hosts, send jobs, measure, enforce, and name the ending.

A :class:`JailHost` is one bubblewrap jail running :mod:`sandbox.host`; a :class:`SandboxPool`
keeps ``size`` of them warm and hands each job to an idle one. The same classes give the
slower ways a benchmark compares against: a fresh jailed interpreter per session, i.e. per
submission (``reuse=False``), and a fresh unjailed one (``jailed=False``).

The runner, never the child, decides how a visit ended: it owns the wall clock (and kills
the child when it runs out), reads the child's exit status from the host and the memory peak
from the child's cgroup, and hands both, with what the child left, to
:func:`sandbox.verdicts.interpret`, which validates every byte that comes back.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import queue
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import torch

from sandbox import cgroups, jailfs
from sandbox.protocol import (
    JobRequest,
    JobResult,
    JobStatus,
    ReadExactly,
    SandboxLimits,
    read_frame_fd,
)
from sandbox.tensors import encode
from sandbox.verdicts import BadReport, interpret, validate_exited

log = logging.getLogger(__name__)

#: How long a host may take to start (importing torch inside the jail takes ~1.5 s).
HOST_START_SECONDS = 60.0
#: How long the host may take to report a child that has ended or been killed.
HOST_REPORT_GRACE_SECONDS = 10.0
#: How long the job's processes may take to disappear after the host reported the end.
JOB_END_GRACE_SECONDS = 2.0
#: A fixed mmap threshold stops glibc from adapting it to history, so a large tensor is
#: always mapped and unmapped and peak memory readings repeat from run to run.
_MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": "131072"}


class HostFailure(RuntimeError):
    """The jail host broke (not the learner's doing): the job ends as internal_error."""


@dataclass(frozen=True)
class JailConfig:
    """How jobs are isolated and where they run."""

    limits: SandboxLimits = field(default_factory=SandboxLimits)
    #: Run inside bubblewrap with the seccomp filter (False only for the naive baseline).
    jailed: bool = True
    #: Keep the host for the next job (the warm pool); False starts one per job.
    reuse: bool = True
    #: Bind the NVIDIA devices into the jail (GPU workers).
    gpu: bool = False


def _ns_pids(pid: int) -> list[int]:
    """A process's pids from the outermost pid namespace we see to its innermost (``NSpid``)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return [int(p) for p in line.split()[1:]]
    except (OSError, ValueError):
        return []
    return []


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            text = (task / "children").read_text()
            found.extend(int(p) for p in text.split())
    except OSError:
        pass
    return found


def _find_descendant(root: int, ns_pid: int, depth: int = 4) -> int | None:
    """The outer pid of the descendant of ``root`` whose innermost pid is ``ns_pid``."""
    frontier = [root]
    for _ in range(depth):
        nxt: list[int] = []
        for pid in frontier:
            for child in _children(pid):
                pids = _ns_pids(child)
                if pids and pids[-1] == ns_pid:
                    return child
                nxt.append(child)
        frontier = nxt
    return None


def _job_processes(host_pid: int, report: dict[str, Any]) -> tuple[int, int]:
    """Outer pids of the job's manager and child, checked against the process tree.

    The manager must be a direct child of the host with the pid it reported, and the child a
    direct child of the manager, one pid namespace deeper, where it is pid 1. A report naming
    any other process (a reused pid, a process of an earlier job) is refused.
    """
    manager_ns, child_ns = report.get("manager"), report.get("child")
    if type(manager_ns) is not int or type(child_ns) is not int:
        raise HostFailure("the jail host reported a malformed fork")
    host_depth = len(_ns_pids(host_pid))
    managers = [p for p in _children(host_pid) if _ns_pids(p)[-1:] == [manager_ns]]
    if len(managers) != 1 or len(_ns_pids(managers[0])) != host_depth:
        raise HostFailure("the job manager the host reported is not its child")
    children = [
        p
        for p in _children(managers[0])
        if _ns_pids(p) and len(_ns_pids(p)) == host_depth + 1 and _ns_pids(p)[-2:] == [child_ns, 1]
    ]
    if len(children) != 1:
        raise HostFailure("the job's child is not pid 1 of a fresh pid namespace below its manager")
    return managers[0], children[0]


def _gone(pid: int) -> bool:
    """Whether a process has ended (or is a zombie nobody reaped yet)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("State:"):
                return line.split()[1] in ("Z", "X")
    except OSError:
        return True
    return True


class _Spawner:
    """Starts every jail host from one long-lived thread.

    bubblewrap's ``--die-with-parent`` uses ``PR_SET_PDEATHSIG``, which fires when the
    *thread* that forked it exits: a host started from a short-lived thread would be killed
    with it. Hosts started here die with the process, as intended, and never before.
    """

    def __init__(self) -> None:
        self._requests: queue.Queue[tuple[tuple[Any, ...], dict[str, Any], queue.Queue[Any]]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _serve(self) -> None:
        while True:
            args, kwargs, reply = self._requests.get()
            try:
                reply.put(subprocess.Popen(*args, **kwargs))
            except BaseException as exc:  # handed to the caller
                reply.put(exc)

    def popen(self, *args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="jail-spawner", daemon=True)
                self._thread.start()
        reply: queue.Queue[Any] = queue.Queue()
        self._requests.put((args, kwargs, reply))
        result = reply.get()
        if isinstance(result, BaseException):
            raise result
        return result


_SPAWNER = _Spawner()


class JailHost:
    """One jail host process and the protocol to run jobs on it."""

    def __init__(self, config: JailConfig) -> None:
        self.config = config
        self.proc: subprocess.Popen[bytes] | None = None
        self.outer_pid: int | None = None
        self.start_seconds = 0.0
        self._started_since_last_job = False
        #: The host's last lines on stderr (its managers' tracebacks), for the operator's log.
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=20)

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        """Start the host and wait for it to report ready."""
        t0 = time.monotonic()
        cmd = jailfs.python_boot(self.config.jailed)
        if self.config.jailed:
            cmd = jailfs.bwrap_command(gpu=self.config.gpu) + cmd
        if not self.config.jailed:
            cmd.append("--no-seccomp")
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1", **_MALLOC_ENV}
        self.proc = _SPAWNER.popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            close_fds=True,
            start_new_session=True,
        )
        threading.Thread(target=self._drain_stderr, args=(self.proc, self.stderr_tail), daemon=True).start()
        assert self.proc.stdout is not None  # Popen with stdout=PIPE
        try:
            ready, _ = read_frame_fd(self.proc.stdout.fileno(), ReadExactly(t0 + HOST_START_SECONDS), max_blob=0)
        except (EOFError, TimeoutError, ValueError) as exc:
            self.stop()
            raise HostFailure(f"the jail host did not start ({type(exc).__name__})") from None
        if ready.get("event") != "ready":
            self.stop()
            raise HostFailure("the jail host sent an unexpected greeting")
        ready_pid = ready.get("pid")
        self.outer_pid = (
            (_find_descendant(self.proc.pid, ready_pid) if self.config.jailed else self.proc.pid)
            if type(ready_pid) is int
            else None
        )
        if self.outer_pid is None:
            self.stop()
            raise HostFailure("the jail host's process could not be found")
        self.start_seconds = time.monotonic() - t0
        self._started_since_last_job = True

    @staticmethod
    def _drain_stderr(proc: subprocess.Popen[bytes], tail: collections.deque[str]) -> None:
        """Log what the host prints, and keep its last lines for the message when it breaks."""
        assert proc.stderr is not None
        for raw in proc.stderr:
            line = raw.decode(errors="replace").rstrip()[:500]
            tail.append(line)
            log.debug("jail host: %s", line)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """Kill the host and everything in its jail."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            self.proc.kill()
        except OSError:
            pass
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        self.proc = None

    # -- one job ---------------------------------------------------------------------------
    def run(
        self, request: JobRequest, inputs: dict[str, torch.Tensor], limits: SandboxLimits | None = None
    ) -> JobResult:
        """Run one job on this host, under ``limits`` (the host's own by default: a caller may
        only lower them, never raise them). Raises :class:`HostFailure` when the host breaks."""
        assert self.proc is not None and self.proc.stdin is not None and self.proc.stdout is not None
        limits = self.config.limits if limits is None else _lowered(self.config.limits, limits)
        timings = {"jail_start": self.start_seconds if self._started_since_last_job else 0.0}
        self._started_since_last_job = False
        t0 = time.monotonic()
        blob = encode(inputs)
        child_limits = {**asdict(limits)}
        use_cgroup = cgroups.available() and self.config.jailed
        if not use_cgroup and not self.config.gpu:
            # Without a memory cgroup, an address-space cap is the only hard memory limit.
            child_limits["address_space_bytes"] = _host_vm_bytes(self.outer_pid) + limits.memory_bytes
        out_fd = self.proc.stdout.fileno()
        # The calls and their inputs stay here until the child has imported the module and found
        # its function and asks for them (``inputs_wanted``): what it did before it asked was
        # decided without them, and only this side knows whether they were sent.
        module = request.to_json()
        hidden = {"op": "inputs", "calls": module.pop("calls"), "warmup_calls": module.pop("warmup_calls")}
        module.update(calls=[], warmup_calls=[])
        inputs_sent = asked = False

        def answer(frame: dict[str, Any], frame_blob: bytes, give: bool = True) -> bool:
            """Whether ``frame`` asks for the calls and inputs (once per job); if so, answer it:
            with them, or (``give`` False: the job was killed) with an empty refusal."""
            nonlocal asked, inputs_sent
            if frame.get("event") != "inputs_wanted":
                return False
            if asked or frame_blob:
                raise HostFailure("the jail host asked for a job's inputs twice, or with data")
            asked = True
            assert self.proc is not None and self.proc.stdin is not None
            if give:
                inputs_sent = True  # from here on the learner's process may hold them
                _send(self.proc.stdin, hidden, blob)
            else:
                _send(self.proc.stdin, {"op": "withheld"})
            return True

        try:
            _send(self.proc.stdin, {"op": "run", "request": module, "limits": child_limits})
            forked, _ = read_frame_fd(out_fd, ReadExactly(time.monotonic() + HOST_REPORT_GRACE_SECONDS), max_blob=0)
        except (EOFError, TimeoutError, OSError, ValueError) as exc:
            raise HostFailure(f"the jail host stopped answering ({type(exc).__name__})") from None
        if forked.get("event") != "forked":
            raise HostFailure("the jail host sent an unexpected frame instead of a fork report")
        _, child_pid = _job_processes(self.outer_pid or self.proc.pid, forked)
        group: cgroups.JobCgroup | None = None
        # Result files, plus the captured output's head and tail, plus slack for separators.
        max_blob = limits.output_bytes * 2 + 2 * (limits.captured_output_bytes + 8)
        try:
            if use_cgroup:
                group = cgroups.JobCgroup(limits.memory_bytes, limits.max_threads)
                group.add(child_pid)
            timings["fork_and_setup"] = time.monotonic() - t0
            t_run = time.monotonic()
            _send(self.proc.stdin, {"op": "go"})
            killed_for_time = False
            # The wall clock bounds when the report begins; a report that began in time is read whole.
            reader = ReadExactly(t_run + limits.wall_seconds, then=HOST_REPORT_GRACE_SECONDS)
            try:
                exited, files_blob = read_frame_fd(out_fd, reader, max_blob=max_blob)
                while answer(exited, files_blob):
                    reader = ReadExactly(t_run + limits.wall_seconds, then=HOST_REPORT_GRACE_SECONDS)
                    exited, files_blob = read_frame_fd(out_fd, reader, max_blob=max_blob)
            except TimeoutError:
                if reader.started:
                    raise HostFailure("the jail host stalled in the middle of a report") from None
                killed_for_time = True
                try:
                    os.kill(child_pid, signal.SIGKILL)  # pid 1 of the job's namespace: all of it ends
                except OSError:
                    pass
                try:
                    exited, files_blob = read_frame_fd(
                        out_fd, ReadExactly(time.monotonic() + HOST_REPORT_GRACE_SECONDS), max_blob=max_blob
                    )
                    # asked for just as the clock ran out: the manager waits for an answer
                    while answer(exited, files_blob, give=False):
                        exited, files_blob = read_frame_fd(
                            out_fd, ReadExactly(time.monotonic() + HOST_REPORT_GRACE_SECONDS), max_blob=max_blob
                        )
                except (TimeoutError, EOFError, ValueError, OSError):
                    raise HostFailure("the jail host did not report a killed child") from None
            except (EOFError, ValueError, OSError) as exc:
                raise HostFailure(f"the jail host broke during the job ({type(exc).__name__})") from None
            wall = time.monotonic() - t_run
            timings["run"] = wall
            try:
                validate_exited(exited, len(files_blob), limits)
            except BadReport as exc:
                raise HostFailure(f"the jail host sent a malformed report ({exc})") from None
            # Believe nothing until every process of the job is gone (its init, and the cgroup
            # empty), and the pipe holds nothing more: the trusted manager writes one report and
            # exits, so anything left would be read as the next job's frame.
            self._await_job_end(group, (child_pid,))
            if select.select([out_fd], [], [], 0)[0]:
                raise HostFailure("the jail host wrote more than one report for a job")
            peak = group.peak_bytes() if group else max(0, exited["maxrss_bytes"] - exited["host_rss_bytes"])
            oom = group.oom_killed() if group else None
            cpu = group.cpu_seconds() if group else None
        finally:
            if group is not None:
                group.close()
        if cpu is not None:
            exited["cpu_seconds"] = cpu  # measured by the kernel for the job's cgroup
        t_collect = time.monotonic()
        result = interpret(
            exited,
            files_blob,
            limits,
            killed_for_time,
            oom,
            call_ids=[c.id for c in request.calls],
            source=(request.source, request.filename),
            inputs_given=inputs_sent,
        )
        result.peak_memory_bytes = peak
        result.memory_source = group.source if group else "rusage"
        cuda_peaks = [c.cuda_peak_bytes for c in result.calls if c.cuda_peak_bytes is not None]
        if self.config.gpu and cuda_peaks:
            # On a GPU the budget is device memory. The figure comes from the child's CUDA
            # caching allocator, so unlike the cgroup it is self-reported (docs/security.md).
            result.peak_memory_bytes = max(cuda_peaks)
            result.memory_source = "cuda-allocator"
        result.cpu_seconds = float(exited["cpu_seconds"])
        result.wall_seconds = wall
        timings["collect"] = time.monotonic() - t_collect
        result.timings = timings
        return result

    @staticmethod
    def _await_job_end(group: cgroups.JobCgroup | None, pids: tuple[int, ...]) -> None:
        """Return once the job's cgroup is empty and its init (``pids``) is gone.

        The child was pid 1 of its namespace, so this is immediate in practice; anything still
        alive after a grace period is killed and the host is not trusted again.
        """
        deadline = time.monotonic() + JOB_END_GRACE_SECONDS
        while True:
            left = group.processes() if group else []
            alive = [p for p in pids if not _gone(p)]
            if not left and not alive:
                return
            if time.monotonic() > deadline:
                for pid in left + alive:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                raise HostFailure("a process of the job outlived it")
            time.sleep(0.001)


def _lowered(own: SandboxLimits, asked: SandboxLimits) -> SandboxLimits:
    """``asked``, never above the host's ``own`` limits (each limit the lower of the two)."""
    return SandboxLimits(**{f.name: min(getattr(own, f.name), getattr(asked, f.name)) for f in fields(SandboxLimits)})


def _send(stream: Any, header: dict[str, Any], blob: bytes = b"") -> None:
    data = json.dumps(header).encode()
    stream.write(len(data).to_bytes(4, "big") + len(blob).to_bytes(4, "big") + data + blob)
    stream.flush()


def _host_vm_bytes(pid: int | None) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 4 << 30


#: What a visit asked of a closed pool ends with (a server stopping; never the learner's fault).
_STOPPING = "The grader is stopping. This is not your fault and does not count."


class SandboxSession:
    """One host held for a group of visits (one submission's, say); see :meth:`SandboxPool.session`."""

    def __init__(self, host: JailHost, closed: Callable[[], bool] = lambda: False) -> None:
        self._host = host
        self._closed = closed

    def run(
        self, request: JobRequest, inputs: dict[str, torch.Tensor], limits: SandboxLimits | None = None
    ) -> JobResult:
        """Run a job on the held host and return what the jail produced, as a named status
        (under ``limits``, lower than the pool's: :meth:`JailHost.run`)."""
        h = self._host
        if self._closed():  # the pool was closed (shutdown): start no host again
            return JobResult(status=JobStatus.INTERNAL_ERROR, message=_STOPPING)
        try:
            if not h.alive():
                h.stop()
                h.start()
            return h.run(request, inputs, limits)
        except (HostFailure, jailfs.JailUnavailable, OSError) as exc:
            if self._closed():  # the pool was closed under the job (shutdown), and stopped its host
                log.info("jail host stopped under its job: the pool was closed")
                return JobResult(status=JobStatus.INTERNAL_ERROR, message=_STOPPING)
            # The host's own words say why (a refused namespace, a missing file): the operator needs them.
            log.error("sandbox failure: %s; the jail host's last lines: %s", exc, " | ".join(h.stderr_tail) or "none")
            h.stop()
            return JobResult(
                status=JobStatus.INTERNAL_ERROR,
                message=f"The grader's sandbox failed ({exc}). This is not your fault and does not count.",
            )
        except Exception:
            if self._closed():  # the host's streams were closed under the read (shutdown)
                log.info("jail host stopped under its job: the pool was closed")
                return JobResult(status=JobStatus.INTERNAL_ERROR, message=_STOPPING)
            raise


class SandboxPool:
    """A fixed number of jail hosts; :meth:`run` and :meth:`session` block until one is idle.

    Thread-safe. A host that breaks is replaced before its next job; a job on a broken host
    ends as ``internal_error`` and never counts against the learner. With ``reuse=False`` a
    host is started for each session and stopped after it: a fresh interpreter per session.
    """

    def __init__(self, size: int = 1, config: JailConfig | None = None, *, start: bool = True) -> None:
        self.config = config or JailConfig()
        self._idle: queue.Queue[JailHost] = queue.Queue()
        self._hosts = [JailHost(self.config) for _ in range(max(1, size))]
        self._closed = False
        for h in self._hosts:
            self._idle.put(h)
        if start and self.config.reuse:
            threads = [threading.Thread(target=self._safe_start, args=(h,)) for h in self._hosts]
            for t in threads:
                t.start()
            for t in threads:
                t.join()

    @property
    def size(self) -> int:
        return len(self._hosts)

    @staticmethod
    def _safe_start(h: JailHost) -> None:
        try:
            h.start()
            h._started_since_last_job = False  # warmed ahead of time: no job waited for it
        except Exception as exc:  # started again lazily by the next session
            log.warning("jail host failed to start: %s", exc)

    @contextmanager
    def session(self) -> Iterator[SandboxSession]:
        """Hold one host for several visits; each visit still gets a fresh child."""
        h = self._idle.get()
        try:
            yield SandboxSession(h, lambda: self._closed)
        finally:
            if not self.config.reuse:
                h.stop()
            self._idle.put(h)

    def run(
        self, request: JobRequest, inputs: dict[str, torch.Tensor], limits: SandboxLimits | None = None
    ) -> JobResult:
        """Run one job on an idle host (a session of one visit)."""
        with self.session() as box:
            return box.run(request, inputs, limits)

    def close(self) -> None:
        """Stop every host; a visit asked for afterwards ends as ``internal_error`` at once."""
        self._closed = True
        for h in self._hosts:
            h.stop()
