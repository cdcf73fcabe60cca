"""sandbox.isolation inside a real bubblewrap jail: two job managers in a row, each entering its
own namespaces and forking a child, and what that child can name, see, keep and do."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from sandbox import isolation, jailfs

#: Runs as pid 1 of a bubblewrap jail, like the jail host: forks managers as the host does.
INSIDE = r"""
import ctypes, errno, json, os, sys, threading, time
sys.path[:0] = ["/jail/lib", "/jail/site"]
from sandbox import isolation

libc = ctypes.CDLL(None, use_errno=True)
IPC_CREAT, KEY = 0o1000, 0x5EED
QUEUE = libc.msgget(KEY, IPC_CREAT | 0o600)  # a System V queue in the jail's own IPC namespace

def caps():
    header = isolation._CapHeader(isolation._LINUX_CAPABILITY_VERSION_3, 0)
    data = (isolation._CapData * 2)()
    assert libc.capget(ctypes.byref(header), ctypes.byref(data)) == 0
    return data[0].effective | data[1].effective << 32

def errname(ret):
    return "ok" if ret == 0 else errno.errorcode[ctypes.get_errno()]

def manager(tag, w):
    # This fork is single-threaded, as the host's managers are.
    isolation.enter_job_namespaces(8 << 20)
    tmp_before = sorted(os.listdir("/tmp"))
    with open(f"/tmp/left-by-{tag}", "w") as fh:
        fh.write("x")
    pid = os.fork()
    if pid == 0:
        report = {"pid": os.getpid(), "ppid": os.getppid(), "uid": os.getuid(), "gid": os.getgid(),
                  "proc": os.listdir("/proc"), "tmp_before": tmp_before, "tmp": sorted(os.listdir("/tmp")),
                  "queue": libc.msgget(KEY, 0) >= 0, "caps_before": caps(),
                  "clocks": [time.clock_gettime(time.CLOCK_MONOTONIC), time.clock_gettime(time.CLOCK_BOOTTIME)]}
        st = os.statvfs("/tmp")
        report["tmp_bytes"] = st.f_blocks * st.f_frsize
        with open("/tmp/work", "wb") as fh:
            fh.write(b"y" * (1 << 20))
        isolation.drop_capabilities()
        report["caps_after"] = caps()
        report["bounding"] = [c for c in range(41) if libc.prctl(23, c, 0, 0, 0) == 1]  # PR_CAPBSET_READ
        report["securebits"] = libc.prctl(27, 0, 0, 0, 0)  # PR_GET_SECUREBITS
        report["mount_after"] = errname(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None))
        os.write(w, json.dumps(report).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    os._exit(0)

def threaded(w):
    stop = threading.Event()
    threading.Thread(target=stop.wait).start()
    try:
        isolation.enter_job_namespaces(1 << 20)
        result = "entered"
    except isolation.IsolationError as exc:
        result = errno.errorcode[exc.errno]
    stop.set()
    os.write(w, result.encode())
    os._exit(0)

reports = {}
for tag, target in (("first", manager), ("second", manager), ("threaded", threaded)):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            (target(tag, w) if target is manager else target(w))
        finally:
            os._exit(3)
    os.close(w)
    os.waitpid(pid, 0)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    reports[tag] = data.decode()
reports["jail_tmp"] = sorted(os.listdir("/tmp"))
reports["jail_clocks"] = [time.clock_gettime(time.CLOCK_MONOTONIC), time.clock_gettime(time.CLOCK_BOOTTIME)]
print(json.dumps(reports))
"""


@pytest.fixture(scope="module")
def jobs() -> dict:
    cmd = jailfs.bwrap_command() + [os.path.realpath(sys.executable), "-I", "-S", "-B", "-c", INSIDE]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    for tag in ("first", "second"):
        assert out[tag].startswith("{"), (tag, out[tag], run.stderr)
        out[tag] = json.loads(out[tag])
    return out


@pytest.mark.parametrize("tag", ["first", "second"])
def test_the_jobs_child_is_pid_1_and_names_no_ancestor(jobs: dict, tag: str) -> None:
    assert jobs[tag]["pid"] == 1 and jobs[tag]["ppid"] == 0


@pytest.mark.parametrize("tag", ["first", "second"])
def test_the_job_runs_as_the_job_user_with_an_empty_proc(jobs: dict, tag: str) -> None:
    assert (jobs[tag]["uid"], jobs[tag]["gid"]) == (isolation.JOB_UID, isolation.JOB_GID)
    assert jobs[tag]["proc"] == []


@pytest.mark.parametrize("tag", ["first", "second"])
def test_each_job_has_its_own_tmp_of_the_size_asked(jobs: dict, tag: str) -> None:
    report = jobs[tag]
    assert report["tmp_before"] == [] and report["tmp"] == [f"left-by-{tag}"]
    assert report["tmp_bytes"] == 8 << 20


def test_nothing_a_job_leaves_reaches_the_next_or_the_jail(jobs: dict) -> None:
    assert "left-by-first" not in jobs["second"]["tmp"] and jobs["jail_tmp"] == []


def test_the_jails_ipc_objects_are_out_of_reach(jobs: dict) -> None:
    assert not jobs["first"]["queue"]


def test_dropping_capabilities_leaves_none_and_locks_them_out(jobs: dict) -> None:
    report = jobs["first"]
    assert report["caps_before"] != 0  # a new user namespace grants the full set inside it
    assert report["caps_after"] == 0 and report["bounding"] == []
    assert report["securebits"] == isolation._SECUREBITS_LOCKED
    assert report["mount_after"] == "EPERM"


def test_a_multithreaded_process_is_refused_with_an_isolation_error(jobs: dict) -> None:
    assert jobs["threaded"] == "EINVAL"


@pytest.mark.parametrize("tag", ["first", "second"])
def test_the_jobs_clocks_start_at_0_not_at_the_hosts_uptime(jobs: dict, tag: str) -> None:
    """Round 12: in a time namespace of its own, a job's CLOCK_MONOTONIC and CLOCK_BOOTTIME start
    at about 0 (the jail's own, as the host's, read the machine's uptime)."""
    if not isolation.TIME_NAMESPACES:
        pytest.skip("this kernel has no time namespaces")
    assert all(0 <= c < 10 for c in jobs[tag]["clocks"]), jobs[tag]["clocks"]
    assert all(c > 60 for c in jobs["jail_clocks"])  # the machine has been up longer than a job


def test_the_clock_offsets_take_the_whole_seconds_off_each_clock() -> None:
    import time

    lines = isolation.clock_offsets().splitlines()
    assert [line.split()[0] for line in lines] == [str(time.CLOCK_MONOTONIC), str(time.CLOCK_BOOTTIME)]
    for line, clock in zip(lines, (time.CLOCK_MONOTONIC, time.CLOCK_BOOTTIME)):
        _, secs, nsecs = line.split()
        assert nsecs == "0" and 0 <= time.clock_gettime(clock) + int(secs) < 5
