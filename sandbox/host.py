"""The jail host: a fork-server that runs inside bubblewrap and forks one job per request.

It imports PyTorch once, so a job costs a ``fork`` instead of a fresh interpreter. The host is
pid 1 of the jail (bubblewrap ``--as-pid-1``: no other process holds the control pipes), is
non-dumpable, and never reads job data: for each request it forks a short-lived **manager**.

The manager reads the request, then enters fresh user, mount, pid and IPC namespaces
(:mod:`sandbox.isolation`): a private tmpfs ``/tmp`` holds the job's files and nothing else,
``/proc`` is an empty tmpfs. It forks the job's **init**, pid 1 of the new pid namespace, which
waits for "go" (sent once the trusted runner has put it in the job's cgroups) and forks the
learner's **child** (pid 2). The child can name no process but itself and init (and the
seccomp filter lets it signal only itself), and inherits only its own descriptors. When init
ends, every process in the namespace is gone, and when the manager exits the private ``/tmp``
goes with its mount namespace: nothing a job leaves reaches the next one.

The child, before it reads the learner's source: starts its own session, keeps only its job
files, the setup pipe and its stdin (the pipe its inputs will come on), sets resource limits
(CPU, file size, no core, 256 descriptors, 64 queued signals: :data:`SIGPENDING_LIMIT`, no POSIX
message queue bytes: the last two are per-user quotas shared by every jail, review 10), drops
every capability, installs the seccomp filter, and loads the job. Then it writes one byte on the *setup* pipe and closes it. Only a
job whose setup byte never arrived can end as the grader's fault; every later exit is the
learner's. Init reports how the child ended on a pipe of its own.

The job's calls and input tensors are not in the request: they stay outside the jail until the
child, its module imported and its function found, asks for them (it stops itself; init, its
parent, sees the stop and tells the manager); the manager then asks the runner
(``inputs_wanted``) and writes what it sends to the child's stdin, a pipe. The manager
forks the job before it ever holds them, so no process of the job starts with a copy, and the
runner knows whether it sent them (``sandbox.verdicts`` believes an outcome of the import phase
only of a job that never had them).

The manager reads the child's result files only once the child is dead, without following
links, as regular files, and bounded by the caps; then it reports and exits.

Control protocol on fds 0 (in) and 1 (out), framed by :mod:`sandbox.protocol`:
  <- {"event": "ready", "pid": ...}
  -> {"op": "run", "request": {...}, "limits": {...}}   (a request with no calls; no blob)
  <- {"event": "forked", "manager": pid, "child": pid}   (pids as the jail sees them; "child"
                                                          is the job's init)
  -> {"op": "go"}                       (or {"op": "abort"})
  <- {"event": "inputs_wanted"}          (at most once: the child asked for its calls and inputs)
  -> {"op": "inputs", "calls": [...], "warmup_calls": [...]} + inputs blob
  <- {"event": "exited", "setup_ok": bool, ...} + the child's result files, concatenated
"""

from __future__ import annotations

import ctypes
import ctypes.util  # pre-imported: a child may not be able to read it later
import json
import os
import resource
import select
import signal
import stat
import struct
import sys
import warnings
from typing import Any

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

import torch  # noqa: E402

from sandbox import harness, isolation, seccomp  # noqa: E402
from sandbox.exit_codes import ExitCode  # noqa: E402
from sandbox.protocol import MAX_REQUEST_BLOB_BYTES, ReadExactly, read_frame_fd, write_frame_fd  # noqa: E402

#: The byte the child writes on the setup pipe once it is isolated and has loaded its job.
SETUP_OK = b"S"
#: What the job's init writes about the learner's process: exit code (-1 when signalled),
#: signal (0 when exited), user and system CPU seconds, peak RSS in KiB.
STATUS_RECORD = struct.Struct("=iiddq")
#: Where the job's files live, inside the manager's private tmpfs.
JOB_DIR = "/tmp/job"

_PR_SET_DUMPABLE = 4
#: Real-time signals (and POSIX timers) the learner's process may have queued at once. The
#: kernel counts queued signals per user, level by level up the user namespaces, and compares a
#: job's own count (its user namespace is its own) with this limit: a job can hold at most this
#: many of the outer user's quota, which every jail shares, so no job comes near that quota and
#: none can read what another holds (review 10). Python and torch queue none.
SIGPENDING_LIMIT = 64
#: Exit codes of the per-job manager process.
_MANAGER_DONE = 0
_MANAGER_STOP = 1
_MANAGER_FAILED = 2
RESULT_FILES = ("result.json", "outputs.safetensors", "stdout.txt", "stderr.txt")
_OPEN_RESULT = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _write_file(path: str, data: bytes) -> None:
    fd = os.open(path, _CREATE, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _close_all_but(*keep: int) -> None:
    """Close every descriptor above stderr except ``keep``."""
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 65536)


def _job_init(
    go_fd: int, setup_fd: int, status_fd: int, ask_fd: int, feed_fd: int, limits: dict[str, Any], use_seccomp: bool
) -> None:
    """pid 1 of the job's pid namespace (trusted; never runs learner code); never returns.

    It waits for "go" (by then the runner has put it in the job's cgroups, which the learner's
    process inherits), forks the learner's process, waits for it, and writes how it ended to
    the status pipe. The learner's process is then an ordinary process (pid 2): the kernel's
    limit signals (SIGXCPU, SIGXFSZ) and its own signals act on it as usual, which they would
    not on a namespace's pid 1.

    The learner's process asks for its calls and inputs by stopping itself (``SIGSTOP``, see
    :func:`sandbox.harness.inputs_from_stdin`): the first time it stops, init tells the manager
    on ``ask_fd`` (the manager then gets them from the runner and writes them to the child's
    stdin, ``feed_fd``) and continues it. A later stop is the learner's own: it stays stopped
    until the wall clock ends the job. So the child holds no descriptor it could write to the
    trusted side with.
    """
    code: int = ExitCode.SANDBOX_SETUP
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        _close_all_but(go_fd, setup_fd, status_fd, ask_fd, feed_fd)
        go = os.read(go_fd, 1)
        os.close(go_fd)
        if go != b"g":
            os._exit(ExitCode.ABORTED)
        pid = os.fork()
        if pid == 0:
            os.close(status_fd)
            os.close(ask_fd)
            _learner(setup_fd, feed_fd, limits, use_seccomp)
        os.close(setup_fd)
        os.close(feed_fd)  # the learner's process holds the only copy in the job
        while True:
            ended, status, usage = os.wait4(-1, os.WUNTRACED)
            if ended != pid:
                continue
            if not os.WIFSTOPPED(status):
                break
            if ask_fd >= 0:  # the first stop asks for the inputs; a later one is left to the clock
                os.write(ask_fd, harness.ASK_INPUTS)
                os.close(ask_fd)
                ask_fd = -1
                os.kill(pid, signal.SIGCONT)
        learner_code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
        learner_signal = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
        os.write(
            status_fd, STATUS_RECORD.pack(learner_code, learner_signal, usage.ru_utime, usage.ru_stime, usage.ru_maxrss)
        )
        code = 0
    except BaseException:
        pass
    os._exit(code)


def _learner(setup_fd: int, feed_fd: int, limits: dict[str, Any], use_seccomp: bool) -> None:
    """The learner's process (pid 2 of the job's namespace); never returns."""
    code: int = ExitCode.SANDBOX_SETUP
    try:
        os.setsid()  # a process group of its own: kill(0, ...) reaches nothing but itself
        out = os.open(os.path.join(JOB_DIR, "stdout.txt"), _CREATE, 0o600)
        err = os.open(os.path.join(JOB_DIR, "stderr.txt"), _CREATE, 0o600)
        os.dup2(feed_fd, 0)  # stdin: the calls and inputs arrive there, once asked for
        os.dup2(out, 1)
        os.dup2(err, 2)
        # Only stdio and the setup pipe survive: no descriptor of the host, manager or init.
        _close_all_but(setup_fd)
        sys.stdout = open(1, "w", encoding="utf-8", errors="replace", buffering=1, closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", errors="replace", buffering=1, closefd=False)
        cpu = max(1, int(limits["cpu_seconds"] + 0.999))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits["output_bytes"], limits["output_bytes"]))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
        # Per-user kernel quotas, one for every jail's jobs: a job's share of each is capped
        # (queued signals) or nothing (POSIX message queues; seccomp refuses mq_* too), so what
        # one job holds never shows in what another may take (review 10).
        resource.setrlimit(resource.RLIMIT_SIGPENDING, (SIGPENDING_LIMIT, SIGPENDING_LIMIT))
        resource.setrlimit(resource.RLIMIT_MSGQUEUE, (0, 0))
        if limits.get("address_space_bytes"):
            aspace = limits["address_space_bytes"]
            resource.setrlimit(resource.RLIMIT_AS, (aspace, aspace))
        # Python ignores SIGXFSZ; a child that writes past its limit must end, not loop on EFBIG.
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        work = os.path.join(JOB_DIR, "tmp")
        os.chdir(work)
        os.environ.clear()
        os.environ.update({"HOME": work, "TMPDIR": work, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
        isolation.drop_capabilities()
        if use_seccomp:
            seccomp.install(os.getpid())
        request, _ = harness.load_job(JOB_DIR)  # the source, its name and the function's: no call, no input
        # From here on, whatever happens is the learner's doing.
        os.write(setup_fd, SETUP_OK)
        os.close(setup_fd)
        code = ExitCode.HARNESS_FAILED
        code = harness.run_loaded_job(JOB_DIR, request, harness.inputs_from_stdin)
    except MemoryError:
        code = ExitCode.OUT_OF_MEMORY
    except BaseException:
        try:
            import traceback

            traceback.print_exc()
        except BaseException:
            pass
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        pass
    os._exit(code)


def _open_regular(path: str) -> tuple[int, int] | None:
    """(fd, size) of a regular file at ``path``, never following a link or blocking on a FIFO."""
    try:
        fd = os.open(path, _OPEN_RESULT)
    except OSError:
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        return None
    return fd, info.st_size


def _read_upto(fd: int, n: int) -> bytes:
    chunks: list[bytes] = []
    while n > 0:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _read_result_file(path: str, cap: int, excerpt: bool) -> tuple[bytes, int] | None:
    """At most ``cap`` bytes of a result file and its full size; None when it is not a regular file.

    ``excerpt`` keeps the head and the tail (printed output), so both the first error and the
    last line survive.
    """
    opened = _open_regular(path)
    if opened is None:
        return None
    fd, size = opened
    try:
        if not excerpt or size <= cap:
            return _read_upto(fd, cap), size
        half = max(0, cap - 128) // 2  # room for the separator and the runner's truncation note
        head = _read_upto(fd, half)
        os.lseek(fd, size - half, os.SEEK_SET)
        return head + b"\n...\n" + _read_upto(fd, half), size
    finally:
        os.close(fd)


def _tmp_space() -> tuple[int, int]:
    """(free, total) bytes of the job's private tmp."""
    try:
        st = os.statvfs("/tmp")
        return st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize
    except OSError:
        return 0, 0


def _run_job(header: dict[str, Any], ctl_in: int, ctl_out: int, use_seccomp: bool) -> None:
    """The manager's work for one job (it runs in a process of its own, forked per job)."""
    limits = header["limits"]
    request = header["request"]
    if request.get("calls") or request.get("warmup_calls"):
        # The calls come later, on request (:func:`_pass_inputs_on`): held here, they would be
        # in the memory of the job's processes, forked from this one.
        raise ValueError("a run request carries calls")
    rss_before = _own_rss()  # before /proc is covered
    isolation.enter_job_namespaces(int(limits["tmp_bytes"]))
    os.mkdir(JOB_DIR, 0o700)
    os.mkdir(os.path.join(JOB_DIR, "tmp"), 0o700)
    _write_file(os.path.join(JOB_DIR, "request.json"), json.dumps(request).encode())
    go_r, go_w = os.pipe()
    setup_r, setup_w = os.pipe()
    status_r, status_w = os.pipe()
    ask_r, ask_w = os.pipe()
    feed_r, feed_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        for fd in (go_w, setup_r, status_r, ask_r, feed_w):
            os.close(fd)
        _job_init(go_r, setup_w, status_w, ask_w, feed_r, limits, use_seccomp)
    for fd in (go_r, setup_w, status_w, ask_w, feed_r):
        os.close(fd)
    write_frame_fd(ctl_out, {"event": "forked", "manager": os.getpid(), "child": pid})
    order, _ = read_frame_fd(ctl_in, ReadExactly(), max_blob=0)
    os.write(go_w, b"g" if order.get("op") == "go" else b"x")
    os.close(go_w)
    _pass_inputs_on(ask_r, feed_w, ctl_in, ctl_out)
    _, status, usage = os.wait4(pid, 0)
    # The job's init was pid 1 of its namespace: when wait4 returns, no process of the job is left.
    setup_ok = os.read(setup_r, 1) == SETUP_OK
    record = os.read(status_r, STATUS_RECORD.size)
    os.close(setup_r)
    os.close(status_r)
    if len(record) == STATUS_RECORD.size:  # how the learner's process ended
        code, sig, user, system, maxrss_kib = STATUS_RECORD.unpack(record)
        exit_code, term_signal = (code, None) if sig == 0 else (None, sig)
        cpu, maxrss = user + system, maxrss_kib * 1024
    else:  # init itself was killed (the runner's clock) or failed
        exit_code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        term_signal = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        cpu, maxrss = usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024
    files: dict[str, int] = {}
    sizes: dict[str, int] = {}
    parts: list[bytes] = []
    for name in RESULT_FILES:
        excerpt = name.endswith(".txt")
        read = _read_result_file(
            os.path.join(JOB_DIR, name), limits["captured_output_bytes"] if excerpt else limits["output_bytes"], excerpt
        )
        if read is None:
            continue
        data, size = read
        files[name] = len(data)
        sizes[name] = size
        parts.append(data)
    tmp_free, tmp_total = _tmp_space()
    write_frame_fd(
        ctl_out,
        {
            "event": "exited",
            "setup_ok": setup_ok,
            "tmp_free_bytes": tmp_free,
            "tmp_total_bytes": tmp_total,
            "exit_code": exit_code,
            "signal": term_signal,
            "cpu_seconds": cpu,
            "maxrss_bytes": maxrss,
            "host_rss_bytes": rss_before,
            "files": files,
            "sizes": sizes,
        },
        b"".join(parts),
    )


def _pass_inputs_on(ask_r: int, feed_w: int, ctl_in: int, ctl_out: int) -> None:
    """Wait until the job's init says its child asked for its calls and inputs, or init has
    ended (an import that failed, a time limit, an abort); when asked, get them from the
    runner and write them to the child's stdin. Closes both ends."""
    try:
        asked = os.read(ask_r, 1)
    finally:
        os.close(ask_r)
    try:
        if asked == harness.ASK_INPUTS:
            write_frame_fd(ctl_out, {"event": "inputs_wanted"})
            given, blob = read_frame_fd(ctl_in, ReadExactly(), max_blob=MAX_REQUEST_BLOB_BYTES)
            if given.get("op") == "inputs":
                hidden = {"calls": given.get("calls", []), "warmup_calls": given.get("warmup_calls", [])}
                try:
                    write_frame_fd(feed_w, hidden, blob)
                except OSError:  # the child ended, or closed its end, without reading them
                    pass
    finally:
        os.close(feed_w)


def _own_rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize()


def _warm_up() -> None:
    """Do once, here, what every job would otherwise do first: torch reads /proc/cpuinfo on its
    first operation (a job sees no /proc), and first calls of common kernels are slow.

    Tiny tensors only: an op large enough to run in parallel would leave OpenMP state that
    hangs every forked child.
    """
    x = torch.ones(4, requires_grad=True)
    y = (torch.exp(x - 1.0) * x).clamp(0.0, 2.0).mean()
    y.backward()
    torch.backends.cpu.get_cpu_capability()


def main(argv: list[str]) -> None:
    """Serve jobs from the control pipe until it closes."""
    use_seccomp = "--no-seccomp" not in argv
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    torch.set_num_threads(1)
    _warm_up()
    # Move the control channel off 0/1 so nothing printed by accident can corrupt it.
    ctl_in, ctl_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(2, 1)
    write_frame_fd(ctl_out, {"event": "ready", "pid": os.getpid(), "torch": torch.__version__})
    while True:
        # Wait for the next request without reading it: a job manager forked for this one job
        # reads it. The fork-server itself never holds a job's source, inputs or outputs, so a
        # later child (a copy of its memory) cannot find an earlier learner's data in its heap.
        select.select([ctl_in], [], [])
        manager = os.fork()
        if manager == 0:
            code = _MANAGER_STOP
            try:
                # no blob: a run request holds no input (they come on request, :func:`_pass_inputs_on`)
                header, _ = read_frame_fd(ctl_in, ReadExactly(), max_blob=0)
                if header.get("op") == "run":
                    _run_job(header, ctl_in, ctl_out, use_seccomp)
                    code = _MANAGER_DONE
            except EOFError:
                pass
            except BaseException:
                code = _MANAGER_FAILED
                try:
                    import traceback

                    traceback.print_exc()
                except BaseException:
                    pass
            os._exit(code)
        while True:
            try:
                pid, status = os.waitpid(-1, 0)  # pid 1 of the jail: reap whatever ends
            except ChildProcessError:
                return
            if pid == manager:
                break
        if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != _MANAGER_DONE:
            # stop (end of stream, an unknown op) or a broken manager: ending the host closes
            # the control pipe, so the runner sees it at once and starts a fresh host.
            return


if __name__ == "__main__":
    main(sys.argv[1:])
