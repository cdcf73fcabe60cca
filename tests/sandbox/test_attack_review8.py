"""Review 8: a white-box red team of the jail, from inside learner code, graded by the real judge
or run on real jail hosts. The service-level attacks of the same review (the import error shown
before the due date, the long-poll flood) are in tests/server/test_attack_review8.py.

Each test asserts what a safe jail does (it failed, as a strict xfail, while the attack worked).
Every assertion reads what came back, never how long anything took.

What worked until the fixes (the sources are in tests/sandbox/review8_sources.py); the seccomp
filter (sandbox/seccomp.py) now refuses ``flock``, fcntl's locks, leases and ``F_NOTIFY``,
``fadvise64``, ``readahead``, ``mincore``, ``cachestat``, ``madvise(MADV_COLD/MADV_PAGEOUT)`` and
``RWF_NOWAIT`` (the two jails of a submission still run at once: what is left between them is
timing, docs/security.md):

- a covert channel between the two jails a submission runs in at once (its regular calls and its
  measured case): ``flock`` on torch's read-only files, shared by inode across namespaces. The
  measured jail hands its case to the regular jail, which does the work where nobody measures
  it and sends back the digests: a solution over the memory budget passes the memory check, and
  the board gets a peak (and CPU time) of a run that did nothing;
- the same channel lets the jail that never got inputs raise at import a type and line chosen
  from the other jail's inputs (tests/server/test_attack_review8.py);
- dnotify (``fcntl(F_NOTIFY)``): a watch on a shared read-only folder gets a signal each time a
  concurrent job reads a file there (what the inotify and fanotify bans were for);
- the page cache carries bits from one job to the next: ``posix_fadvise(DONTNEED)`` clears a
  shared file's pages, reads set chosen ones, and a later job tells which are cached with
  ``preadv2(RWF_NOWAIT)`` (no timing involved).

Attempts that failed (the jail held):

- a later job scanning its whole heap (``gc`` objects, and raw pages found with ``mincore``) for
  an earlier job's source: nothing (the host never reads a job's data)
- a digest forged with a huge weighted |sum| to widen its tolerance: both sums must agree within
  1e-4 of the larger one, and the 32 sampled elements are compared with the reference's (read)
- signals to the job's init (``kill``, ``tgkill``, ``kill(-1)``), ``setpgid`` into its group,
  ``ptrace``, ``fork``, ``unshare``, ``setns``, ``keyctl``, ``personality``, ``prctl(PR_SET_MM)``:
  EPERM; ``/proc`` is empty, there is no ``/sys``, fds 0-2 only, ``/jail`` read-only
- ``syslog(READ_ALL)`` to read other jobs' OOM kills and segfaults from the kernel log: EPERM
- the hidden calls read from stdin at import without asking: nothing there (EAGAIN)
- asking for the inputs at import (``SIGSTOP``), reading them, then raising a chosen exception:
  refused as malformed (``crashed``)
- ``torch.Tensor.layout``/``device`` patched to lie in the record: the harness fails, ``crashed``
- a NaN gradient at clipped positions to pass "zero gradient where clipped" (``NaN > 1e-7`` is
  False): the same check then compares the gradient with the reference's (read)
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sandbox.protocol import SandboxLimits
from sandbox.runner import SandboxPool
from tests.hostile.conftest import run_at_once as _at_once
from tests.hostile.conftest import run_f as _run
from tests.hostile.conftest import two_jail_hosts
from tests.sandbox.review8_sources import FLOAT64_HONEST, OFFLOADED_MEASURED_CASE

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
#: Limits that leave the two jails of a submission time to meet under load.
LIMITS = SandboxLimits(cpu_seconds=5, wall_seconds=12, memory_bytes=1 << 30, output_bytes=8 << 20,
                       tmp_bytes=64 << 20)


@pytest.fixture(scope="module")
def judge() -> Iterator[Any]:
    from exercises.judge import Judge

    j = Judge(secret=b"review8-jail-secret", limits=LIMITS, pool_size=1)
    try:
        yield j
    finally:
        j.close()


@pytest.fixture(scope="module")
def pool() -> Iterator[SandboxPool]:
    """Two warm jail hosts, for jobs that run at once."""
    yield from two_jail_hosts(LIMITS)


def _memory_check(report: Any) -> Any:
    return next(c for c in report.checks if c.name.startswith("peak memory"))


# --- 1. the measured case computed in the other jail ------------------------------------------


def test_a_measured_case_is_measured_where_it_is_computed(judge: Any) -> None:
    honest = judge.grade("actor-loss", FLOAT64_HONEST, 8)
    assert honest.verdict == "graded" and not _memory_check(honest).passed, "the baseline is over the budget"
    report = judge.grade("actor-loss", OFFLOADED_MEASURED_CASE, 8)
    assert report.verdict == "graded", report.message
    memory = _memory_check(report)
    assert not memory.passed, (
        f"float64 copies passed the memory check (score {report.score}, peak {report.peak_memory_bytes} bytes "
        f"against {honest_peak(honest)} for the same solution measured honestly)"
    )
    # The channel closed, the attack falls back to honest work: the figure on the boards, if
    # any, is a peak of that run (no lower than the honest solution's), never one of a run that
    # did not compute.
    assert report.peak_memory_bytes is None or (
        honest.peak_memory_bytes is not None and report.peak_memory_bytes >= 0.9 * honest.peak_memory_bytes
    ), f"a figure reached the boards from a run that did not compute: {report.peak_memory_bytes} bytes"


def honest_peak(report: Any) -> str:
    found = [w for w in _memory_check(report).message.split() if w.replace(".", "").isdigit()]
    return f"{found[0]} MiB" if found else "?"


# --- 2. dnotify: who reads which shared file, and when -----------------------------------------

WATCHER = r'''
import fcntl, os, signal, time
seen = []
signal.signal(signal.SIGIO, lambda s, f: seen.append(1))
fd = os.open("/jail/site/torch/distributions", os.O_RDONLY)
try:
    fcntl.fcntl(fd, fcntl.F_NOTIFY, fcntl.DN_ACCESS | fcntl.DN_MULTISHOT)
    print("F_NOTIFY accepted")
except OSError as exc:
    print("F_NOTIFY refused", type(exc).__name__)
deadline = time.monotonic() + 6
while time.monotonic() < deadline and len(seen) < 3:
    time.sleep(0.05)
print("SIGIO", len(seen))
def f(x):
    return x
'''
READER = r'''
import time
time.sleep(1.0)
for _ in range(20):
    with open("/jail/site/torch/distributions/normal.py", "rb") as fh:
        fh.read()
    time.sleep(0.2)
def f(x):
    return x
'''


def test_a_job_cannot_watch_what_a_concurrent_job_reads(pool: SandboxPool) -> None:
    watcher, reader = _at_once(pool, WATCHER, READER)
    assert watcher.status.value == "ok" and reader.status.value == "ok", (watcher.message, reader.message)
    accepted = "F_NOTIFY accepted" in watcher.stdout
    signals = int(watcher.stdout.split("SIGIO")[-1].split()[0])
    assert not accepted or signals == 0, f"the watcher saw {signals} reads of the other job"


# --- 3. the page cache: bits from one job to the next -------------------------------------------

#: A file of the allowed packages that nothing loads (a test library of torch's): its pages are the channel's.
PAGE_CHANNEL = r'''
import os
fd = os.open("/jail/site/torch/lib/libtorchbind_test.so", os.O_RDONLY)
try:
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # no readahead: one page a bit
except OSError:
    pass
SLOT = 16 << 10
PATTERN = 0xA5C3_96E1_0F7B
def f(x):
    return x
'''
SET_BITS = PAGE_CHANNEL + r'''
try:
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # every page out of the cache
except OSError:
    pass
for i in range(48):
    if PATTERN >> i & 1:
        os.pread(fd, 1, i * SLOT)  # these pages in
print("SET")
'''
READ_BITS = PAGE_CHANNEL + r'''
got = 0
for i in range(48):
    try:
        os.preadv(fd, [bytearray(1)], i * SLOT, os.RWF_NOWAIT)  # EAGAIN unless cached
        got |= 1 << i
    except OSError:
        pass
print("GOT %x" % got)
'''


def test_a_job_leaves_nothing_a_later_job_can_read(pool: SandboxPool) -> None:
    first = _run(pool, SET_BITS)
    assert first.status.value == "ok" and "SET" in first.stdout, first.message
    later = _run(pool, READ_BITS)
    assert later.status.value == "ok", later.message
    assert f"GOT {0xA5C3_96E1_0F7B:x}" not in later.stdout, "the later job read the earlier job's 48 bits"
