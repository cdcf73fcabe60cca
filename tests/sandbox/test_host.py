"""sandbox.host: one real jailed host spoken to frame by frame (ready, run, forked, go or abort,
exited), its per-job bookkeeping, and how it ends; plus its file helpers called directly."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import host, jailfs
from sandbox.exit_codes import ExitCode
from sandbox.protocol import Arg, Call, JobRequest, ReadExactly, SandboxLimits, read_frame_fd, write_frame_fd
from sandbox.verdicts import validate_exited

LIMITS = SandboxLimits(cpu_seconds=5, wall_seconds=10, memory_bytes=512 << 20, output_bytes=1 << 20,
                       tmp_bytes=16 << 20, captured_output_bytes=1024)
SOURCE = "print('hello from the job')\ndef f():\n    return 41 + 1\n"


class Host:
    """A jailed host process and its two pipes."""

    def __init__(self) -> None:
        cmd = jailfs.bwrap_command() + jailfs.python_boot(True)
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env={"PATH": "/usr/bin:/bin"}, start_new_session=True)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.to, self.frm = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        #: Whether the last job's child asked for its calls and inputs.
        self.asked = False

    def send(self, header: dict, blob: bytes = b"") -> None:
        write_frame_fd(self.to, header, blob)

    def read(self, max_blob: int = 0) -> tuple[dict, bytes]:
        return read_frame_fd(self.frm, ReadExactly(), max_blob=max_blob)

    def run(self, request: JobRequest, op: str = "go") -> tuple[dict, dict, bytes]:
        """One job; its calls are sent only when the child asks (``inputs_wanted``), as the runner does."""
        sent = request.to_json()
        calls = {"op": "inputs", "calls": sent.pop("calls"), "warmup_calls": sent.pop("warmup_calls")}
        self.send({"op": "run", "request": {**sent, "calls": [], "warmup_calls": []}, "limits": LIMITS.__dict__})
        forked, _ = self.read()
        self.send({"op": op})
        exited, blob = self.read(max_blob=4 << 20)
        self.asked = exited.get("event") == "inputs_wanted"
        if self.asked:
            self.send(calls)
            exited, blob = self.read(max_blob=4 << 20)
        return forked, exited, blob


@pytest.fixture(scope="module")
def jail_host() -> Iterator[Host]:
    h = Host()
    yield h
    h.proc.kill()
    h.proc.wait()


def _files(exited: dict, blob: bytes) -> dict[str, bytes]:
    out, offset = {}, 0
    for name, length in exited["files"].items():
        out[name] = blob[offset:offset + length]
        offset += length
    return out


def test_the_host_greets_with_its_pid_in_the_jail(jail_host: Host) -> None:
    ready, blob = jail_host.read()
    assert ready["event"] == "ready" and ready["pid"] == 1 and isinstance(ready["torch"], str) and blob == b""


def test_a_trivial_job_runs_and_its_files_come_back_within_the_schema(jail_host: Host) -> None:
    forked, exited, blob = jail_host.run(JobRequest(source=SOURCE, function="f", calls=[]))
    assert forked["event"] == "forked" and forked["manager"] > 1 and forked["child"] > 1
    validate_exited(exited, len(blob), LIMITS)
    assert exited["setup_ok"] and exited["exit_code"] == ExitCode.OK and exited["signal"] is None
    files = _files(exited, blob)
    assert set(files) == {"result.json", "outputs.safetensors", "stdout.txt", "stderr.txt"}
    assert json.loads(files["result.json"]) == {"status": "ok", "calls": []}
    assert files["stdout.txt"] == b"hello from the job\n"
    assert exited["tmp_total_bytes"] == LIMITS.tmp_bytes


def test_every_job_gets_a_fresh_manager_and_the_host_keeps_serving(jail_host: Host) -> None:
    request = JobRequest(source="import os\nprint(sorted(os.listdir('/tmp/job')))\n", function="f", calls=[])
    managers = set()
    for _ in range(3):
        forked, exited, blob = jail_host.run(request)
        managers.add(forked["manager"])
        # the job folder holds only this job's files: the request and inputs are gone already
        assert _files(exited, blob)["stdout.txt"] == b"['stderr.txt', 'stdout.txt', 'tmp']\n"
    assert len(managers) == 3


def test_an_abort_ends_the_job_before_its_code_runs_and_the_host_serves_on(jail_host: Host) -> None:
    _, exited, blob = jail_host.run(JobRequest(source="print('ran')\n", function="f", calls=[]), op="abort")
    assert not exited["setup_ok"] and exited["exit_code"] == ExitCode.ABORTED and blob == b""
    _, exited, _ = jail_host.run(JobRequest(source=SOURCE, function="f", calls=[]))
    assert exited["setup_ok"] and exited["exit_code"] == ExitCode.OK


def test_a_child_asks_for_its_calls_only_once_its_module_is_imported_and_its_function_found(
    jail_host: Host,
) -> None:
    """The host sends no input before the child asks, and the child asks only after the import:
    a module that fails to import, or lacks the function, never holds the inputs."""
    for source in ("def f(:\n", "raise KeyError('k')\n", "def g():\n    pass\n"):
        _, exited, _ = jail_host.run(JobRequest(source=source, function="f", calls=[]))
        assert exited["event"] == "exited" and not jail_host.asked, source
    request = JobRequest(source="def f(x):\n    return x\n", function="f", calls=[Call(id="a", args=[Arg.of_value(2)])])
    _, exited, blob = jail_host.run(request)
    assert jail_host.asked and exited["exit_code"] == ExitCode.OK
    assert json.loads(_files(exited, blob)["result.json"])["calls"][0]["output"] == {"type": "int", "value": 2}


def test_a_run_request_that_carries_calls_ends_the_host() -> None:
    """Calls sent with the request would be in the memory of every process forked for the job."""
    h = Host()
    try:
        assert h.read()[0]["event"] == "ready"
        request = JobRequest(source=SOURCE, function="f", calls=[Call(id="a")]).to_json()
        h.send({"op": "run", "request": request, "limits": LIMITS.__dict__})
        with pytest.raises(EOFError):
            h.read()
    finally:
        h.proc.kill()
        h.proc.wait()


def test_a_learner_exit_after_setup_is_reported_as_the_learners(jail_host: Host) -> None:
    _, exited, _ = jail_host.run(JobRequest(source="import os\nos._exit(23)\n", function="f", calls=[]))
    assert exited["setup_ok"] and exited["exit_code"] == 23  # ExitCode.SANDBOX_SETUP, chosen by the learner


def test_an_unknown_op_ends_the_host() -> None:
    h = Host()
    try:
        assert h.read()[0]["event"] == "ready"
        h.send({"op": "dance"})
        with pytest.raises(EOFError):
            h.read()
        assert h.proc.wait(timeout=30) == 0
    finally:
        h.proc.kill()
        h.proc.wait()


def test_closing_the_control_pipe_ends_the_host() -> None:
    h = Host()
    try:
        assert h.read()[0]["event"] == "ready"
        assert h.proc.stdin is not None
        h.proc.stdin.close()
        assert h.proc.wait(timeout=30) == 0
    finally:
        h.proc.kill()
        h.proc.wait()


def test_result_files_are_read_head_and_tail_and_only_up_to_the_cap(tmp_path: Path) -> None:
    (tmp_path / "r").write_bytes(b"A" * 100 + b"B" * 100)
    assert host._read_result_file(str(tmp_path / "r"), 50, excerpt=False) == (b"A" * 50, 200)
    assert host._read_result_file(str(tmp_path / "r"), 500, excerpt=True) == (b"A" * 100 + b"B" * 100, 200)
    data, size = host._read_result_file(str(tmp_path / "r"), 180, excerpt=True) or (b"", 0)
    assert size == 200 and data == b"A" * 26 + b"\n...\n" + b"B" * 26


def test_a_status_record_is_fixed_size_and_round_trips() -> None:
    packed = host.STATUS_RECORD.pack(-1, 9, 0.5, 0.25, 1234)
    assert len(packed) == host.STATUS_RECORD.size and host.STATUS_RECORD.unpack(packed) == (-1, 9, 0.5, 0.25, 1234)


def test_close_all_but_keeps_exactly_the_named_descriptors() -> None:
    fds = [os.open(os.devnull, os.O_RDONLY) for _ in range(6)]
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # only os calls here: nothing of torch runs in this fork
        host._close_all_but(fds[1], fds[4], w)
        alive = []
        for fd in fds:
            try:
                os.fstat(fd)
                alive.append(fd)
            except OSError:
                pass
        os.write(w, json.dumps(alive).encode())
        os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    alive = json.loads(os.read(r, 1000))
    os.close(r)
    for fd in fds:
        os.close(fd)
    assert alive == [fds[1], fds[4]]
