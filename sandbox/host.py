"""The jail host: a fork-server that runs inside bubblewrap and forks one child per job.

It imports PyTorch once, so a job costs a ``fork`` instead of a fresh interpreter. For each
job it forks a short-lived manager that reads the request, forks the learner's child, and
reports; the fork-server never reads job data, so no child inherits another job's source or
outputs in its copy of the heap. After each job it wipes the jail's ``/tmp``. It never
runs learner code itself and never touches CUDA or a parallel (OpenMP) op, since a child
forked after either would hang or fail. Each child, before it reads the learner's source:
starts its own session, drops every inherited descriptor but its job files, waits until the
trusted runner has put it in its own memory and pids cgroups, then sets resource limits,
no-new-privileges and a seccomp filter. The host makes itself non-dumpable so a child
cannot read its memory.

Control protocol on fds 0 (in) and 1 (out), framed by :mod:`sandbox.protocol`:
  <- {"event": "ready", "pid": ...}
  -> {"op": "run", "request": {...}, "limits": {...}} + inputs blob
  <- {"event": "forked", "pid": child pid as the host sees it}
  -> {"op": "go"}                       (or {"op": "abort"})
  <- {"event": "exited", ...} + the child's result files, concatenated
"""

from __future__ import annotations

import ctypes
import ctypes.util  # noqa: F401  (pre-imported: a child may not be able to read it later)
import json
import os
import resource
import select
import shutil
import signal
import sys
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

import torch  # noqa: E402

from sandbox import harness, seccomp  # noqa: E402
from sandbox.protocol import ReadExactly, read_frame_fd  # noqa: E402

#: Exit codes of the child beyond the harness's own (see :mod:`sandbox.harness`).
EXIT_ABORTED = 20
EXIT_OUT_OF_MEMORY = 21
EXIT_HARNESS_FAILED = 22
EXIT_SANDBOX_SETUP = 23

_PR_SET_DUMPABLE = 4
#: Exit codes of the per-job manager process.
_MANAGER_DONE = 0
_MANAGER_STOP = 1
_MANAGER_FAILED = 2
_RESULT_FILES = ("result.json", "outputs.safetensors", "stdout.txt", "stderr.txt")


def _write(fd: int, header: dict, blob: bytes = b"") -> None:
    data = json.dumps(header).encode()
    payload = len(data).to_bytes(4, "big") + len(blob).to_bytes(4, "big") + data + blob
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view):]


def _child(job_dir: str, go_fd: int, limits: dict, use_seccomp: bool) -> None:
    """Runs in the forked child; never returns."""
    code = EXIT_SANDBOX_SETUP
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDONLY)
        out = os.open(os.path.join(job_dir, "stdout.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        err = os.open(os.path.join(job_dir, "stderr.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        # Only stdio and the go pipe survive: the control channel must be out of reach.
        os.closerange(3, go_fd)
        os.closerange(go_fd + 1, 65536)
        go = os.read(go_fd, 1)
        os.close(go_fd)
        if go != b"g":
            os._exit(EXIT_ABORTED)
        sys.stdout = open(1, "w", encoding="utf-8", errors="replace", buffering=1, closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", errors="replace", buffering=1, closefd=False)
        cpu = max(1, int(limits["cpu_seconds"] + 0.999))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits["output_bytes"], limits["output_bytes"]))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
        if limits.get("address_space_bytes"):
            aspace = limits["address_space_bytes"]
            resource.setrlimit(resource.RLIMIT_AS, (aspace, aspace))
        # Python ignores SIGXFSZ; a child that writes past its limit must end, not loop on EFBIG.
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        work = os.path.join(job_dir, "tmp")
        os.chdir(work)
        os.environ.clear()
        os.environ.update({"HOME": work, "TMPDIR": work, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
        if use_seccomp:
            seccomp.install(os.getpid())
        code = EXIT_HARNESS_FAILED
        code = harness.run_job(job_dir)
    except MemoryError:
        code = EXIT_OUT_OF_MEMORY
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


def _read_capped(path: str, cap: int) -> tuple[bytes, int]:
    """The first ``cap`` bytes of a file and its full size (0, 0 when missing)."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            return fh.read(cap), size
    except OSError:
        return b"", 0


def _output_excerpt(path: str, keep: int) -> tuple[bytes, int]:
    """Head and tail of a captured stream, so both the first error and the last line survive."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            if size <= keep:
                return fh.read(), size
            # leave room for the separator and the runner's truncation note within ``keep``
            half = max(0, keep - 128) // 2
            head = fh.read(half)
            fh.seek(size - half)
            return head + b"\n...\n" + fh.read(), size
    except OSError:
        return b"", 0


def _jail_tmp() -> str:
    return os.environ.get("PPO_JAIL_TMP", "/tmp")


def _tmp_space() -> tuple[int, int]:
    """(free, total) bytes of the jail's private tmp."""
    try:
        st = os.statvfs(_jail_tmp())
        return st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize
    except OSError:
        return 0, 0


def _wipe_tmp() -> None:
    """Remove everything under the jail's tmp: nothing a job left may reach the next one."""
    root = _jail_tmp()
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)
        except OSError:
            pass


def _run_job(seq: int, header: dict, blob: bytes, ctl_in: int, ctl_out: int, use_seccomp: bool) -> None:
    limits = header["limits"]
    job_dir = os.path.join(_jail_tmp(), f"job-{seq}")
    os.makedirs(os.path.join(job_dir, "tmp"))
    with open(os.path.join(job_dir, "request.json"), "w", encoding="utf-8") as fh:
        fh.write(json.dumps(header["request"]))  # dumps uses the C encoder; dump does not
    if blob:
        with open(os.path.join(job_dir, "inputs.safetensors"), "wb") as fh:
            fh.write(blob)
    rss_before = _own_rss()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(w)
        _child(job_dir, r, limits, use_seccomp)
    os.close(r)
    _write(ctl_out, {"event": "forked", "pid": pid})
    order, _ = read_frame_fd(ctl_in, ReadExactly())
    os.write(w, b"g" if order.get("op") == "go" else b"x")
    os.close(w)
    _, status, usage = os.wait4(pid, 0)
    files: dict[str, int] = {}
    sizes: dict[str, int] = {}
    parts: list[bytes] = []
    for name in _RESULT_FILES:
        path = os.path.join(job_dir, name)
        if name.endswith(".txt"):
            data, size = _output_excerpt(path, limits["captured_output_bytes"])
        else:
            data, size = _read_capped(path, limits["output_bytes"])
        if not os.path.exists(path):
            continue
        files[name] = len(data)
        sizes[name] = size
        parts.append(data)
    tmp_free, tmp_total = _tmp_space()
    shutil.rmtree(job_dir, ignore_errors=True)
    _write(
        ctl_out,
        {
            "event": "exited",
            "tmp_free_bytes": tmp_free,
            "tmp_total_bytes": tmp_total,
            "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "cpu_seconds": usage.ru_utime + usage.ru_stime,
            "maxrss_bytes": usage.ru_maxrss * 1024,
            "host_rss_bytes": rss_before,
            "files": files,
            "sizes": sizes,
        },
        b"".join(parts),
    )


def _own_rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize()


def main(argv: list[str]) -> None:
    """Serve jobs from the control pipe until it closes."""
    use_seccomp = "--no-seccomp" not in argv
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    torch.set_num_threads(1)
    # Move the control channel off 0/1 so nothing printed by accident can corrupt it.
    ctl_in, ctl_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(2, 1)
    _write(ctl_out, {"event": "ready", "pid": os.getpid(), "torch": torch.__version__})
    seq = 0
    while True:
        # Wait for the next request without reading it: a job manager forked for this one job
        # reads it. The fork-server itself never holds a job's source, inputs or outputs, so a
        # later child (a copy of its memory) cannot find an earlier learner's data in its heap.
        select.select([ctl_in], [], [])
        seq += 1
        manager = os.fork()
        if manager == 0:
            code = _MANAGER_STOP
            try:
                header, blob = read_frame_fd(ctl_in, ReadExactly())
                if header.get("op") == "run":
                    _run_job(seq, header, blob, ctl_in, ctl_out, use_seccomp)
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
        _, status = os.waitpid(manager, 0)
        _wipe_tmp()
        if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != _MANAGER_DONE:
            # stop (end of stream, an unknown op) or a broken manager: ending the host closes
            # the control pipe, so the runner sees it at once and starts a fresh host.
            return


if __name__ == "__main__":
    main(sys.argv[1:])
