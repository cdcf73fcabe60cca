"""Review 10: a white-box red team of the jail and the judge, from inside learner code run on real
jail hosts (bubblewrap, seccomp, cgroups) and graded by the real judge.

Each test asserts what a safe service does. Sources are in tests/hostile/review10_sources.py.

What worked, and is closed now (each test below failed before the fix):

- three clockless channels between jails that run at once (a submission's regular and measured
  visits always do): every job runs as the same user outside its namespaces, and the kernel keeps
  these quotas per user. A job that holds part of one leaves less for the other, which reads how
  much by taking what is left and giving it back: the real-time signals it may queue
  (``RLIMIT_SIGPENDING``, about 96,000 here: 16 bits a reading), the bytes of POSIX message queues
  (``RLIMIT_MSGQUEUE``, 800 KiB: 9 queues of 80 KiB here) and the pipe pages (``F_SETPIPE_SZ`` is
  refused past ``fs.pipe-user-pages-soft``: 55 pipes of 1 MiB here). The channels review 8 and 9
  closed (flock, shared futexes) carried review 8's offloaded measured case;
- a measured case whose result holds more than 64 tensors: the harness writes a digest of each,
  the trusted side refuses more than 64 and tells the learner the grader failed;
- ptys: ``/dev/ptmx`` opened in a job, and every pty counts against one limit of the machine
  (``kernel.pty.max``).

How they are closed: the learner's process has ``RLIMIT_SIGPENDING`` 64 (the kernel compares a
job's own count, in its own user namespace, with it, so no job holds more than 64 of the shared
quota and the probe reads 64 alone and beside the holder), ``RLIMIT_MSGQUEUE`` 0 and seccomp
refuses the ``mq_*`` calls (EPERM: the probe opens no queue), ``F_SETPIPE_SZ`` and
``F_GETPIPE_SZ`` answer EPERM (no pipe grows; a default pipe still takes 16 pages of
``pipe-user-pages-soft``, docs/security.md), the harness digests at most
``sandbox.protocol.MAX_DIGESTS`` tensors and marks the call, which the trusted side names as the
learner's output limit, and ``/dev/pts`` is an empty read-only tmpfs in the jail.

What holds (passing, or covered by earlier reviews): pipe buffers count against the job's memory
cgroup; no writable place outside the job's private ``/tmp``; fds 0-2 only; stdin holds nothing
after the inputs; the child's heap holds no grader secret; float64 and integer results lose their
dtype and value checks.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sandbox import host
from sandbox.protocol import JobResult, SandboxLimits
from sandbox.runner import SandboxPool
from sandbox.verdicts import MALFORMED, TOO_MANY_TENSORS
from tests.hostile import sources as S
from tests.hostile.conftest import Jail, run_at_once, run_f, two_jail_hosts
from tests.hostile.review10_sources import HOLDER, PIPE_HOARD, PROBE

pytestmark = pytest.mark.slow

#: Room for a 4.5 s holder and a 2.4 s probe to overlap under load.
LIMITS = SandboxLimits(cpu_seconds=10, wall_seconds=20, memory_bytes=512 << 20, output_bytes=8 << 20,
                       tmp_bytes=64 << 20)
QUOTAS = ("queued signals", "message queues", "1 MiB pipes")


@pytest.fixture(scope="module")
def pool() -> Iterator[SandboxPool]:
    """Two warm jail hosts, for jobs that run at once."""
    yield from two_jail_hosts(LIMITS)


def _numbers(result: JobResult, word: str) -> tuple[int, ...]:
    assert result.status.value == "ok", (result.status, result.message, result.stderr)
    return tuple(int(n) for n in result.stdout.split(word + " ")[-1].split()[:3])


@pytest.fixture(scope="module")
def readings(pool: SandboxPool) -> dict[str, tuple[int, ...]]:
    """What the probe reads of each quota alone, and beside a job that holds part of each (the two
    jails must overlap: under load a try can miss, and the attacker tries again)."""
    alone = _numbers(run_f(pool, PROBE), "GOT")
    beside: tuple[int, ...] = alone
    held: tuple[int, ...] = (0, 0, 0)
    for _ in range(2):
        holder, probe = run_at_once(pool, HOLDER, PROBE)
        held, beside = _numbers(holder, "HOLDING"), _numbers(probe, "GOT")
        if all(b < a for a, b in zip(alone, beside)):
            break
    return {"alone": alone, "beside": beside, "held": held}


def _leaked(readings: dict[str, tuple[int, ...]], i: int) -> str | None:
    """Why the probe's reading of quota ``i`` shows the holder, or None. A reading beside the holder
    that is lower than alone by at least half of what the holder held is the holder's."""
    alone, beside, held = readings["alone"][i], readings["beside"][i], readings["held"][i]
    if held and alone - beside >= max(1, held // 2):
        return f"{QUOTAS[i]}: {alone} alone, {beside} while the other jail held {held}"
    return None


def test_a_job_cannot_count_the_signals_a_concurrent_job_queued(readings: dict[str, tuple[int, ...]]) -> None:
    assert _leaked(readings, 0) is None, _leaked(readings, 0)


def test_a_job_cannot_measure_the_message_queues_a_concurrent_job_holds(readings: dict[str, tuple[int, ...]]) -> None:
    assert _leaked(readings, 1) is None, _leaked(readings, 1)


def test_a_job_cannot_see_the_pipe_buffers_a_concurrent_job_holds(readings: dict[str, tuple[int, ...]]) -> None:
    assert _leaked(readings, 2) is None, _leaked(readings, 2)


def test_a_jobs_share_of_each_quota_is_its_own_cap(readings: dict[str, tuple[int, ...]]) -> None:
    """The caps that close the three channels: as many signals as RLIMIT_SIGPENDING allows (the
    same beside the holder), no message queue, no pipe grown."""
    want = (host.SIGPENDING_LIMIT, 0, 0)
    assert readings["alone"] == want and readings["beside"] == want and readings["held"] == want, readings


def test_pipe_buffers_count_against_the_jobs_memory_cgroup(pool: SandboxPool) -> None:
    empty = run_f(pool, "def f(x):\n    return x\n")
    hoard = run_f(pool, PIPE_HOARD)
    assert hoard.status.value == "ok", (hoard.status, hoard.message)
    stored = int(hoard.stdout.split("STORED ")[-1].split()[0])
    assert hoard.peak_memory_bytes is not None and empty.peak_memory_bytes is not None
    assert hoard.peak_memory_bytes - empty.peak_memory_bytes >= stored * 0.8, (
        f"{stored} bytes held in pipe buffers, the peak only {hoard.peak_memory_bytes - empty.peak_memory_bytes} "
        "above an empty job's"
    )


#: The honest loss, returned with 64 copies of it beside: a result the harness describes (64
#: items a list) and digests whole on the measured case (65 digests).
MANY_TENSORS = S.HONEST_AS_IMPL + '''
def compute_actor_loss(*args, **kwargs):
    loss = _honest(*args, **kwargs)
    return {"loss": loss, "copies": [loss] * 64}
'''


def test_a_result_the_harness_wrote_is_never_called_the_graders_failure(jail: Jail) -> None:
    report = jail.judge.grade("actor-loss", MANY_TENSORS, 3)  # type: ignore[attr-defined]
    assert report.verdict == "graded", report.message
    memory = next(c for c in report.checks if c.name.startswith("peak memory"))
    assert MALFORMED not in memory.message, memory.message
    assert TOO_MANY_TENSORS in memory.message, memory.message


#: Opens a pty by each way in, and says what happened.
PTY = r'''
import os
for path in ("/dev/ptmx", "/dev/pts/ptmx"):
    try:
        os.close(os.open(path, os.O_RDWR | os.O_NOCTTY))
        print("PTY", path, "opened")
    except OSError as exc:
        print("PTY", path, "refused", exc.errno)
def f(x):
    return x
'''


def test_a_job_cannot_open_a_pty(pool: SandboxPool) -> None:
    result = run_f(pool, PTY)
    assert result.status.value == "ok", (result.status, result.message, result.stderr)
    assert result.stdout.count("PTY ") == 2, result.stdout
    assert "opened" not in result.stdout, result.stdout
