"""sandbox.runner: a real pool of jailed hosts running trivial jobs: results and measurements,
one host reused across a session, the limits named from outside, a dead host replaced, the
fresh-host-per-session mode, and the process-tree checks that refuse a forged fork report."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from dataclasses import replace

import pytest
import torch

from sandbox import cgroups, runner
from sandbox.protocol import Arg, Backward, Call, JobRequest, JobStatus, SandboxLimits

LIMITS = SandboxLimits(cpu_seconds=1, wall_seconds=2, memory_bytes=256 << 20, output_bytes=1 << 20,
                       tmp_bytes=16 << 20, captured_output_bytes=1024)
DOUBLE = JobRequest(source="def f(x):\n    return (x * 2).sum(), x * 2\n", function="f",
                    calls=[Call(id="a", args=[Arg.of_tensor("x", requires_grad=True)], backward=Backward(output=[0]))])
X = torch.tensor([1.0, 2.0, 3.0])


def job(source: str) -> JobRequest:
    return JobRequest(source=source + "\ndef f(x):\n    return x\n", function="f",
                      calls=[Call(id="a", args=[Arg.of_tensor("x")])])


@pytest.fixture(scope="module")
def pool() -> Iterator[runner.SandboxPool]:
    p = runner.SandboxPool(1, runner.JailConfig(limits=LIMITS))
    yield p
    p.close()


def test_a_trivial_job_returns_its_values_gradients_and_measurements(pool: runner.SandboxPool) -> None:
    res = pool.run(DOUBLE, {"x": X})
    assert res.status == JobStatus.OK, res.message
    (call,) = res.calls
    loss, doubled = call.output["items"]  # type: ignore[index]
    assert res.tensors[loss["name"]].item() == 12.0 and torch.equal(res.tensors[doubled["name"]], X * 2)
    assert res.tensors[call.grads["0"]].tolist() == [2.0, 2.0, 2.0]  # type: ignore[index]
    layout = cgroups.layout()
    assert res.memory_source == (f"cgroup-v{layout.version}" if layout else "rusage")
    assert res.peak_memory_bytes is not None and res.peak_memory_bytes > 0
    assert res.cpu_seconds is not None and res.cpu_seconds >= 0
    assert set(res.timings) == {"jail_start", "fork_and_setup", "run", "collect"}
    assert res.timings["jail_start"] == 0.0  # warmed when the pool was made: no job waited for it


def test_a_job_may_be_given_lower_limits_than_the_pools_never_higher(pool: runner.SandboxPool) -> None:
    """Round 12: the probe visit runs under what the graded visit left (``limits``): lower clocks
    stop the job sooner; a limit asked above the pool's is the pool's."""
    sleepy = job("import time\ntime.sleep(1.2)")
    lower = pool.run(sleepy, {"x": X}, replace(LIMITS, wall_seconds=0.4))
    assert lower.status == JobStatus.TIME_LIMIT and "0.4 s" in lower.message, lower.message
    assert pool.run(job(""), {"x": X}, replace(LIMITS, wall_seconds=0.4)).status == JobStatus.OK
    higher = pool.run(job("import time\ntime.sleep(2.5)"), {"x": X}, replace(LIMITS, wall_seconds=100))
    assert higher.status == JobStatus.TIME_LIMIT and f"{LIMITS.wall_seconds:g} s" in higher.message, higher.message
    assert runner._lowered(LIMITS, replace(LIMITS, cpu_seconds=0.5, memory_bytes=1 << 40)) == replace(
        LIMITS, cpu_seconds=0.5
    )


def test_a_session_keeps_one_host_and_forks_a_fresh_child_per_visit(pool: runner.SandboxPool) -> None:
    source = job("import os\nprint(os.getpid(), sorted(os.listdir('/tmp/job/tmp')))\nopen('left', 'w').close()")
    host = pool._hosts[0]
    with pool.session() as box:
        first = box.run(source, {"x": X})
        pid = host.proc.pid if host.proc else None
        second = box.run(source, {"x": X})
        assert host.proc is not None and host.proc.pid == pid
    assert first.status == second.status == JobStatus.OK
    # each visit is pid 2 of its own namespace, and sees only its own file
    assert first.stdout == second.stdout == "2 ['submission.py']\n"


@pytest.mark.parametrize("source, status, words", [
    ("while True:\n    pass", JobStatus.TIME_LIMIT, "limit and was stopped"),  # CPU, or wall under load
    ("import time\ntime.sleep(60)", JobStatus.TIME_LIMIT, "2 s wall-clock limit"),
    ("block = bytearray(b'1') * (1 << 30)", JobStatus.MEMORY_LIMIT, "256 MiB memory limit"),
    ("import sys\nsys.stdout.write('x' * (4 << 20))", JobStatus.OUTPUT_LIMIT, "1 MiB output limit"),
    ("raise ValueError('at import')", JobStatus.RUNTIME_ERROR, "ValueError while being imported"),
    ("import os\nos._exit(0)", JobStatus.CRASHED, "exited before the grader received results"),
    ("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)", JobStatus.CRASHED, "ended by a signal"),
])
def test_how_a_job_ends_is_named_from_outside(pool: runner.SandboxPool, source: str, status: JobStatus,
                                             words: str) -> None:
    res = pool.run(job(source), {"x": X})
    assert res.status == status and words in res.message, (res.status, res.message)


def test_the_pool_survives_every_ending_and_still_grades(pool: runner.SandboxPool) -> None:
    assert pool.run(DOUBLE, {"x": X}).status == JobStatus.OK


def test_a_host_that_died_is_replaced_before_the_next_visit(pool: runner.SandboxPool) -> None:
    host = pool._hosts[0]
    assert host.proc is not None and host.outer_pid is not None
    old = host.proc.pid
    os.kill(host.outer_pid, signal.SIGKILL)  # pid 1 of the jail: bubblewrap and the jail end with it
    host.proc.wait(timeout=30)
    res = pool.run(DOUBLE, {"x": X})
    assert res.status == JobStatus.OK and host.proc is not None and host.proc.pid != old
    assert res.timings["jail_start"] > 0  # this visit waited for the new host


def test_a_host_started_from_a_short_lived_thread_outlives_it_and_a_dead_one_fails_loudly() -> None:
    host = runner.JailHost(runner.JailConfig(limits=LIMITS))
    thread = threading.Thread(target=host.start)
    thread.start()
    thread.join()
    try:
        assert host.alive() and host.run(DOUBLE, {"x": X}).status == JobStatus.OK
        assert host.outer_pid is not None
        os.kill(host.outer_pid, signal.SIGKILL)
        assert host.proc is not None
        host.proc.wait(timeout=30)
        with pytest.raises(runner.HostFailure):
            host.run(DOUBLE, {"x": X})
    finally:
        host.stop()
    assert host.proc is None and not host.alive()


def test_without_reuse_each_session_starts_and_stops_its_own_host() -> None:
    pool = runner.SandboxPool(1, runner.JailConfig(limits=LIMITS, reuse=False))
    try:
        host = pool._hosts[0]
        assert host.proc is None  # nothing started ahead of time
        res = pool.run(DOUBLE, {"x": X})
        assert res.status == JobStatus.OK and res.timings["jail_start"] > 0
        assert host.proc is None  # stopped with its session
    finally:
        pool.close()


@pytest.mark.parametrize("report", [
    {"manager": "1", "child": 2}, {"manager": 1}, {"manager": 1.0, "child": 2}, {"manager": True, "child": 2},
])
def test_a_malformed_fork_report_is_a_host_failure(report: dict) -> None:
    with pytest.raises(runner.HostFailure, match="malformed fork"):
        runner._job_processes(os.getpid(), report)


def test_a_fork_report_naming_processes_outside_the_hosts_tree_is_refused() -> None:
    child = os.fork()
    if child == 0:  # only os calls in this fork
        os.read(os.open(os.devnull, os.O_RDONLY), 1)
        signal.pause()
    try:
        # a real child of this process, but not one pid namespace deeper with a child at pid 1
        with pytest.raises(runner.HostFailure, match="pid 1 of a fresh pid namespace"):
            runner._job_processes(os.getpid(), {"manager": child, "child": 1})
        with pytest.raises(runner.HostFailure, match="not its child"):
            runner._job_processes(os.getpid(), {"manager": os.getpid(), "child": 1})
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)


def test_process_helpers_read_the_real_process_table() -> None:
    assert runner._ns_pids(os.getpid())[-1] == os.getpid()
    assert runner._ns_pids(2**22 + 12345) == []
    assert not runner._gone(os.getpid()) and runner._gone(2**22 + 12345)
    child = os.fork()
    if child == 0:
        os._exit(0)
    try:
        assert child in runner._children(os.getpid())
        while not runner._gone(child):  # a zombie counts as gone (bounded: it exits at once)
            os.sched_yield()
    finally:
        os.waitpid(child, 0)


def test_closing_the_pool_ends_a_job_in_the_jail_and_starts_no_host_again() -> None:
    """Issue 38: a server stopping closes its pools under the jobs in hand. The job ends at once
    as internal_error "stopping" (not as a sandbox failure, not at its wall limit), and a
    visit asked for afterwards starts no host."""
    limits = SandboxLimits(cpu_seconds=60, wall_seconds=120, memory_bytes=256 << 20, output_bytes=1 << 20,
                           tmp_bytes=16 << 20, captured_output_bytes=1024)
    pool = runner.SandboxPool(1, runner.JailConfig(limits=limits))
    host = pool._hosts[0]
    results: list[runner.JobResult] = []
    with pool.session() as box:
        thread = threading.Thread(target=lambda: results.append(box.run(job("import time\ntime.sleep(100)"), {"x": X})))
        thread.start()
        threading.Event().wait(1.0)  # likely in the learner's sleep by now; any moment ends alike
        pool.close()
        thread.join(60)  # the job would take 100 s: a wall bound far from it
        assert not thread.is_alive()
        (ended,) = results
        assert (ended.status, ended.message) == (JobStatus.INTERNAL_ERROR, runner._STOPPING)
        again = box.run(DOUBLE, {"x": X})
    assert (again.status, again.message) == (JobStatus.INTERNAL_ERROR, runner._STOPPING)
    assert host.proc is None  # nothing started after the close
