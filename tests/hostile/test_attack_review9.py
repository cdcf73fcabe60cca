"""Review 9: a white-box red team of the jail and of the long polls, from inside learner code
graded by the real judge or run on real jail hosts, and through the real API over HTTP.

Each test asserts what a safe service does. Every assertion reads what came back (a job's
output, a report, a JSON answer, a counter of the server's), never how long anything took.
Sources are in tests/hostile/review9_sources.py.

What worked, and is closed now (these were strict xfails; sandbox/seccomp.py refuses each):

- a futex on a ``MAP_SHARED`` mapping of one of ``/jail``'s read-only files is keyed by its
  inode, the same in every jail: a waiting thread is one bit, and another jail running at once
  reads it with ``FUTEX_REQUEUE`` onto the same word (how many waiters moved; nobody wakes). The
  same class of channel as review 8's ``flock``: review 8's offload attack, rebuilt on it, passed a
  float64 solution's memory check (score 100, a peak of a run that did not compute). Closed:
  ``futex`` only with ``FUTEX_PRIVATE_FLAG`` (shared ones answer EINVAL), the futex2 calls ENOSYS;
- the page cache carried bits to a *later* job without any clock: a job touches chosen pages of
  files nobody reads; a later job touches each once and reads ``ru_majflt`` (a major fault means
  it was not cached): 64 of 64. Closed: ``getrusage`` answers only for ``RUSAGE_CHILDREN``;
- ``sysinfo``'s machine-wide thread count moved by a concurrent job's 48 threads (noise about
  10). Closed: ``sysinfo`` answers EPERM.

What holds (passing tests): keyrings, memfd, userfaultfd, io_uring, perf_event_open, bpf,
cachestat, memfd_secret, pidfd, kcmp, inotify/fanotify, new mounts, syslog, ptrace and fork
refused; abstract unix sockets refused (no socket at all); sethostname refused (the jail's UTS
namespace outlives a job); ``/dev``, ``/dev/shm``, ``/`` and ``/jail`` not writable; no ``/proc``
or ``/sys``; no exercise, reference or repository in the jail; fds 0-2 only; a fixed environment; System V and POSIX IPC objects die with the
job's IPC namespace (neither a later nor a concurrent job finds them); thread, memory, disk and
fd bombs end their own job only; long polls on another learner's submission answer 404 and leave
no waiting slot or subscription behind.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import random
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sandbox.protocol import JobResult, SandboxLimits
from sandbox.runner import SandboxPool
from tests.hostile.conftest import run_at_once as _at_once
from tests.hostile.conftest import run_f as _run
from tests.hostile.conftest import two_jail_hosts
from tests.hostile.review9_sources import (
    IPC_FIND,
    IPC_LEAVE,
    PROBE,
    PROCS_SAMPLED,
    READ_PAGES,
    SET_PAGES,
    THREADS_HELD,
    futex_bits_reader,
    futex_bits_sender,
    import_error_from_the_other_jail,
    offloaded_measured_case,
)
from tests.sandbox.review8_sources import FLOAT64_HONEST, LEAK_TYPES

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
#: Limits that leave two jails of a submission time to meet under load.
LIMITS = SandboxLimits(cpu_seconds=10, wall_seconds=20, memory_bytes=1 << 30, output_bytes=8 << 20,
                       tmp_bytes=64 << 20)


@pytest.fixture(scope="module")
def pool() -> Iterator[SandboxPool]:
    """Two warm jail hosts, for jobs that run at once."""
    yield from two_jail_hosts(LIMITS)


def _got(result: JobResult) -> int:
    assert result.status.value == "ok", (result.status, result.message, result.stderr)
    return int(result.stdout.split("GOT ")[-1].split()[0], 16)


# --- 1. futexes on a shared read-only file: a channel between jails that run at once -----------


def test_a_job_cannot_read_futex_waiters_of_a_concurrent_job(pool: SandboxPool) -> None:
    read = []
    for _ in range(3):  # the two jails must overlap: under load a try can miss (the attacker tries again)
        pattern = random.getrandbits(32) | 1 << 31 | 1
        sender, reader = _at_once(pool, futex_bits_sender(200, pattern), futex_bits_reader(200))
        assert sender.status.value == "ok" and "HOLDING" in sender.stdout, (sender.message, sender.stderr)
        if _got(reader) == pattern:
            read.append(pattern)
            break
    assert not read, f"the reader read all 32 bits ({read[0]:x}) the other jail held"


@pytest.fixture(scope="module")
def judge() -> Iterator[Any]:
    from exercises.judge import Judge

    j = Judge(secret=JUDGE_SECRET, limits=LIMITS, pool_size=1)
    try:
        yield j
    finally:
        j.close()


def _memory_check(report: Any) -> Any:
    return next(c for c in report.checks if c.name.startswith("peak memory"))


def test_a_measured_case_cannot_be_offloaded_over_futexes(judge: Any) -> None:
    honest = judge.grade("actor-loss", FLOAT64_HONEST, 9)
    assert honest.verdict == "graded" and not _memory_check(honest).passed, "the baseline is over the budget"
    passed = []
    for sid in (9, 10, 11):  # under load the channel can time out (it then works honestly): resubmit
        report = judge.grade("actor-loss", offloaded_measured_case(300), sid)
        assert report.verdict == "graded", report.message
        if _memory_check(report).passed:
            passed.append((sid, report.score, report.peak_memory_bytes))
            break
    assert not passed, (
        f"float64 copies passed the memory check (submission, score, peak bytes: {passed}; the same solution "
        f"measured honestly: {honest.peak_memory_bytes} bytes)"
    )


JUDGE_SECRET = b"review9-jail-secret"


def _warmup_byte(sid: int) -> int:
    """A byte of the measured case's warm-up input, rebuilt here from the judge's secret: what a
    learner must not learn before the due date (review 8's measure of the leak)."""
    from exercises.framework import CaseGen
    from exercises.judge import mix_seed
    from exercises.registry import get_exercise

    cases = get_exercise("actor-loss").build_cases(CaseGen(mix_seed(JUDGE_SECRET, "actor-loss", sid)))
    warmup = next(c for c in cases if c.memory).warmup
    assert warmup is not None
    return int(abs(warmup.args[0].reshape(-1)[0].item()) * 1000) % 256


def test_an_import_error_carries_nothing_of_the_other_jails_inputs(judge: Any) -> None:
    source = import_error_from_the_other_jail(400)
    leaked = []
    for sid in range(900, 912):  # which jail imports first is a race; about half the tries land
        report = judge.grade("actor-loss", source, sid)
        if report.verdict != "runtime_error":
            continue
        text, byte = repr(report), _warmup_byte(sid)
        types = [t for t in LEAK_TYPES if re.search(rf"\b{t}\b", text)]
        places = re.findall(r"_r\d+", text)
        if types[:1] == [LEAK_TYPES[byte & 15]] and places[:1] == [f"_r{byte >> 4}"]:
            leaked.append((sid, byte))
            break
    assert not leaked, f"import errors whose type and line spell a hidden input byte: {leaked}"


# --- 2. the page cache through getrusage: bits to a later job ------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)


def _page_cached(path: Path, page: int) -> bool:
    """The trusted side's view (cachestat, outside the jail): is this page of ``path`` cached?"""
    fd = os.open(path, os.O_RDONLY)
    try:
        span = (ctypes.c_uint64 * 2)(page * 4096, 4096)
        stat = (ctypes.c_uint64 * 5)()
        if _libc.syscall(451, fd, span, stat, 0) != 0:
            raise OSError(ctypes.get_errno(), "cachestat")
        return bool(stat[0])
    finally:
        os.close(fd)


def _drop_from_cache(path: Path) -> None:
    """The trusted side asks the kernel to drop ``path``'s pages from the page cache (written
    back first: the pages of a file pip has just written are dirty), as the attacker's setup."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _uncached_pages(n: int) -> list[tuple[str, int]]:
    """``n`` pages (one per file) of torch's C++ headers that nothing has read: jail paths."""
    import torch

    include = Path(torch.__file__).resolve().parent / "include"
    files = [p for p in include.rglob("*.h") if p.stat().st_size >= 3 * 4096]
    random.shuffle(files)
    chosen: list[tuple[str, int]] = []
    for path in files:
        page = random.randrange(1, path.stat().st_size // 4096)
        if _page_cached(path, page):
            _drop_from_cache(path)  # a fresh install (CI's) or an earlier run left it cached
        if not _page_cached(path, page):
            chosen.append((f"/jail/site/torch/include/{path.relative_to(include)}", page))
            if len(chosen) == n:
                return chosen
    raise AssertionError(f"only {len(chosen)} uncached header pages left on this machine")


def test_a_job_leaves_no_page_cache_bits_a_later_job_reads_with_getrusage(pool: SandboxPool) -> None:
    pages = _uncached_pages(64)
    bits = random.getrandbits(64) | 1 << 63 | 1
    first = _run(pool, SET_PAGES.replace("PAGES", repr(pages)).replace("BITS", str(bits)))
    assert first.status.value == "ok" and "SET" in first.stdout, (first.message, first.stderr)
    later = _run(pool, READ_PAGES.replace("PAGES", repr(pages)))
    assert later.status.value == "ok", (later.status, later.message, later.stderr)
    if "REFUSED EPERM" not in later.stdout:  # the filter refuses getrusage(RUSAGE_SELF)
        assert _got(later) != bits, f"the later job read the earlier job's 64 bits ({bits:x})"


# --- 3. sysinfo: a machine-wide counter a concurrent job moves ----------------------------------


def test_a_job_cannot_count_a_concurrent_jobs_threads(pool: SandboxPool) -> None:
    holder, sampler = _at_once(pool, THREADS_HELD, PROCS_SAMPLED)
    assert holder.status.value == "ok" and sampler.status.value == "ok", (holder.message, sampler.message)
    procs = json.loads(sampler.stdout.split("PROCS ")[-1].splitlines()[0])
    assert not procs or max(procs) - min(procs) < 40, f"the machine's thread count moved by {max(procs) - min(procs)}"


# --- 4. the doors that hold ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def probe(pool: SandboxPool) -> dict[str, Any]:
    result = _run(pool, PROBE)
    assert result.status.value == "ok", (result.status, result.message, result.stderr)
    return dict(json.loads(result.stdout.split("PROBE ")[-1].splitlines()[0]))


REFUSED = {
    "add_key": "EPERM", "keyctl": "EPERM", "request_key": "EPERM", "memfd_create": "EPERM",
    "userfaultfd": "EPERM", "io_uring_setup": "EPERM", "perf_event_open": "EPERM", "bpf": "EPERM",
    "cachestat": "ENOSYS", "memfd_secret": "ENOSYS", "process_madvise": "ENOSYS", "pidfd_open": "EPERM",
    "kcmp": "EPERM", "sethostname": "EPERM", "setdomainname": "EPERM", "sched_setaffinity_init": "EPERM",
    "setpriority_init": "EPERM", "kill_init": "EPERM", "inotify_init1": "EPERM", "fanotify_init": "EPERM",
    "open_tree": "EPERM", "fsopen": "EPERM", "unshare_ipc": "EPERM", "syslog_read_all": "EPERM",
    "ptrace_attach_init": "EPERM", "fork": "EPERM", "abstract_socket": "EPERM",
    "futex_shared_wake": "EINVAL", "futex_shared_wait": "EINVAL", "futex_waitv": "ENOSYS", "futex_wake2": "ENOSYS",
    "futex_wait2": "ENOSYS", "futex_requeue2": "ENOSYS", "getrusage_self": "EPERM", "getrusage_thread": "EPERM",
    "sysinfo": "EPERM",
}


@pytest.mark.parametrize("call", sorted(REFUSED))
def test_a_cross_job_door_is_refused(probe: dict[str, Any], call: str) -> None:
    assert probe[call] == REFUSED[call], f"{call} answered {probe[call]}"


def test_nothing_shared_is_writable_and_nothing_is_inherited(probe: dict[str, Any]) -> None:
    writes = {k: v for k, v in probe.items() if k.startswith("write ")}
    assert writes and all(v != "ok" for v in writes.values()), writes
    assert probe["proc"] == [] and probe["sys"] is False
    assert probe["fds"] == [0, 1, 2], probe["fds"]
    assert set(probe["env"]) <= {"HOME", "TMPDIR", "PATH", "LANG", "OMP_NUM_THREADS", "MALLOC_MMAP_THRESHOLD_"}
    assert probe["hostname"] == "jail"
    assert probe["children_rusage"] == 0.0
    assert probe["getrusage_children"] == "ok" and probe["futex_private_wake"] == "ok"


def test_ipc_objects_die_with_their_job(pool: SandboxPool) -> None:
    left = _run(pool, IPC_LEAVE)
    assert left.status.value == "ok" and "MADE" in left.stdout, (left.message, left.stderr)
    assert "'shm': 'ok'" in left.stdout, left.stdout  # created in the job's own IPC namespace
    later = _run(pool, IPC_FIND)
    assert later.status.value == "ok" and "FOUND []" in later.stdout, later.stdout
    # at once, on two hosts: the leaver holds its objects while the other looks
    holding = IPC_LEAVE.replace('print("MADE", made)', 'print("MADE", made)\nimport time\ntime.sleep(3)')
    finder = "import time\ntime.sleep(1.5)\n" + IPC_FIND
    left, found = _at_once(pool, holding, finder)
    assert left.status.value == "ok" and found.status.value == "ok", (left.message, found.message)
    assert "FOUND []" in found.stdout, found.stdout


def test_no_exercise_reference_is_in_the_jail(pool: SandboxPool) -> None:
    import exercises

    places = [str(Path(exercises.__file__).parent), str(REPO), "/jail/lib/exercises", "/jail/site/exercises",
              "/jail/site/server", "/work"]
    source = (f"import os\nseen = [p for p in {places!r} if os.path.exists(p)]\n"
              "try:\n    import exercises\n    seen.append('import exercises')\nexcept ImportError:\n    pass\n"
              "print('SEEN', seen)\ndef f(x):\n    return x\n")
    result = _run(pool, source)
    assert result.status.value == "ok" and "SEEN []" in result.stdout, (result.stdout, result.message)


# --- 5. bombs end their own job only -------------------------------------------------------------

BOMBS = {
    "threads": "import threading, time\nts = []\nwhile True:\n    t = threading.Thread(target=time.sleep, args=(30,))\n"
               "    t.start()\n    ts.append(t)\n",
    "memory": "chunks = []\nwhile True:\n    chunks.append(bytearray(64 << 20))\n",
    "disk": "import os\nwith open(os.path.join(os.environ['TMPDIR'], 'fill'), 'wb') as fh:\n"
            "    while True:\n        fh.write(b'x' * (1 << 20))\n",
    "fds": "import os\nfds = []\nwhile True:\n    fds.append(os.open('/dev/null', os.O_RDONLY))\n",
    "output": "import sys\nwhile True:\n    sys.stdout.write('x' * (1 << 20))\n",
}


@pytest.mark.parametrize("bomb", sorted(BOMBS))
def test_a_bomb_ends_its_own_job_and_no_other(pool: SandboxPool, bomb: str) -> None:
    honest = "def f(x):\n    return x + 1\n"
    bombed, beside = _at_once(pool, BOMBS[bomb] + honest, honest)
    assert bombed.status.value != "ok", (bomb, bombed.status)
    assert beside.status.value == "ok", (bomb, beside.status, beside.message)
    after = _run(pool, honest)
    assert after.status.value == "ok", (bomb, after.status, after.message)
    assert after.calls and after.calls[0].error is None, after.calls


# --- 6. long polls through the running API -------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Any, dict[str, dict[str, str]]]]:
    """The real app (real jail, SQLite, in-process workers) served by uvicorn over HTTP in this
    process, so that the test can read the announcer's counters; and two learners' headers."""
    import uvicorn

    from server.app import create_app, real_grader
    from server.config import Settings
    from server.db import transaction
    from server.models import Role
    from server.users.service import create_user

    db = Path(tmp_path_factory.mktemp("review9")) / "grader.db"
    settings = Settings(DATABASE_URL=f"sqlite:///{db}", WORKERS=1, SECRET_KEY="review9-service-secret-" + "k" * 20,
                        CPU_SECONDS=5, WALL_SECONDS=20, RATE_LIMIT="10000/minute", MAX_QUEUED_PER_USER=50)
    app = create_app(settings, real_grader)
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        for _ in range(1200):
            if server.started:
                break
            time.sleep(0.1)
        assert server.started, "uvicorn did not start"
        state = app.state.grader
        headers = {}
        with transaction(state.session_factory) as session:
            for name in ("ann", "mal"):
                token = create_user(session, name, Role.LEARNER, settings.secret_bytes).token
                headers[name] = {"Authorization": f"Bearer {token}"}
        yield f"http://127.0.0.1:{port}", state, headers
    finally:
        server.should_exit = True
        thread.join(60)


#: Holds the worker for the wall limit: a submission that stays unfinished while polled.
SLOW = "import time\ntime.sleep(600)\n"


def test_long_polls_on_another_learners_submission_leave_nothing_behind(api: tuple[str, Any, Any]) -> None:
    import httpx

    url, state, headers = api

    async def attack() -> tuple[list[int], list[int], int, int, dict[int, int]]:
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            slow = await client.post("/api/v1/submissions", json={"exercise": "actor-loss", "source": SLOW},
                                     headers=headers["ann"])
            assert slow.status_code == 202, slow.text
            sid = slow.json()["id"]
            # mal polls ann's submission, and ids that do not exist, 200 times at once
            ids = [sid] * 100 + list(range(10**6, 10**6 + 100))
            answers = await asyncio.gather(*[client.get(f"/api/v1/submissions/{i}?wait=30", headers=headers["mal"])
                                             for i in ids])
            codes = sorted({a.status_code for a in answers})
            bodies_with_status = [a.status_code for a in answers if "status" in a.json()]
            # ann's own poll still gets one of her waiting places, and waits
            own = asyncio.create_task(client.get(f"/api/v1/submissions/{sid}?wait=3", headers=headers["ann"]))
            for _ in range(200):
                if state.announcer.waiting():
                    break
                await asyncio.sleep(0.01)
            waiting_during = state.announcer.waiting()
            await own
            return codes, bodies_with_status, waiting_during, state.announcer.waiting(), dict(state.announcer._slots)

    codes, leaked, waiting_during, waiting_after, slots = asyncio.run(attack())
    assert codes == [404], codes
    assert not leaked, "a 404 carried a submission's status"
    assert waiting_during == 1, "ann's own long poll did not wait"
    assert waiting_after == 0 and not slots, (waiting_after, slots)


def test_long_polls_beyond_the_cap_take_no_waiting_place(api: tuple[str, Any, Any]) -> None:
    import httpx

    url, state, headers = api
    most = state.settings.MAX_LONG_POLLS_PER_USER

    async def flood() -> tuple[int, list[int]]:
        async with httpx.AsyncClient(base_url=url, timeout=60,
                                     limits=httpx.Limits(max_connections=100, max_keepalive_connections=100)) as client:
            slow = await client.post("/api/v1/submissions", json={"exercise": "actor-loss", "source": SLOW},
                                     headers=headers["mal"])
            assert slow.status_code == 202, slow.text
            sid = slow.json()["id"]
            polls = [asyncio.create_task(client.get(f"/api/v1/submissions/{sid}?wait=4", headers=headers["mal"]))
                     for _ in range(60)]
            peak = 0
            while not all(p.done() for p in polls):
                # the places taken: each is a request allowed to wait (a poll beyond the cap
                # subscribes too, for its two reads and the pause between them)
                peak = max([peak, *state.announcer._slots.values()])
                await asyncio.sleep(0.005)
            return peak, sorted({p.result().status_code for p in polls})

    peak, codes = asyncio.run(flood())
    assert codes == [200], codes
    assert peak == most, f"{peak} of one learner's long polls held a waiting place at once (cap {most})"
    assert state.announcer.waiting() == 0 and not state.announcer._slots
