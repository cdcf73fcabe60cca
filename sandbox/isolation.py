"""Per-job namespaces: what makes one job's process unable to name or touch anything else.

The job manager (a fresh fork of the jail host, single-threaded) calls :func:`enter_job_namespaces`
before it forks the learner's child. It gets new user, mount, pid and IPC namespaces; in the new
mount namespace a private size-capped tmpfs covers ``/tmp`` and an empty read-only tmpfs covers
``/proc``. The child it forks next is pid 1 of the new pid namespace: it can name no process but
itself (there is no ``/proc`` to list, and no pid outside its namespace resolves), it sees only
its own job's files, and everything it left dies with the namespace when the manager exits.
Where the kernel has time namespaces (:data:`TIME_NAMESPACES`) it gets a new one too, whose
``CLOCK_MONOTONIC`` and ``CLOCK_BOOTTIME`` start at about 0 for the child: the job cannot read
the host's uptime (bubblewrap has no option for a time namespace; this nested one needs none).
:func:`drop_capabilities` then takes away the capabilities that creating a user namespace grants.

Python 3.11 has no ``os.unshare`` and no ``mount``: ctypes calls libc directly.
"""

from __future__ import annotations

import ctypes
import ctypes.util  # pre-imported: the child may not be able to read it later
import os
import time

CLONE_NEWTIME = 0x00000080
CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000

_MS_RDONLY = 1
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_NOEXEC = 8
_MS_REC = 0x4000
_MS_PRIVATE = 1 << 18

_PR_GET_DUMPABLE = 3
_PR_SET_DUMPABLE = 4
_PR_CAPBSET_DROP = 24
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_PR_SET_SECUREBITS = 28
#: SECBIT_NOROOT | SECBIT_NO_SETUID_FIXUP | SECBIT_KEEP_CAPS_LOCKED | their locks: uid 0 in the
#: namespace can never regain capabilities.
_SECUREBITS_LOCKED = 0x2F
_CAP_LAST = 63
_LINUX_CAPABILITY_VERSION_3 = 0x20080522

#: The uid and gid the job's processes have inside their user namespace (never 0: the
#: learner's process is an ordinary user even in its own namespace).
JOB_UID = 1000
JOB_GID = 1000

_libc = ctypes.CDLL(None, use_errno=True)

#: Whether the kernel has time namespaces (Linux 5.6 and later, ``CONFIG_TIME_NS``), read once
#: in the jail host before any job: then every job's clocks are its own (:func:`clock_offsets`).
TIME_NAMESPACES = os.path.exists("/proc/self/ns/time")


class IsolationError(OSError):
    """A namespace, mount or capability call failed: the job cannot run isolated."""


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise IsolationError(err, f"{what}: {os.strerror(err)}")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    ret = _libc.mount(
        source.encode(),
        target.encode(),
        fstype.encode() if fstype else None,
        ctypes.c_ulong(flags),
        data.encode() if data else None,
    )
    _check(ret, f"mount {target}")


def enter_job_namespaces(tmp_bytes: int) -> None:
    """Move the calling (single-threaded) process into fresh user, mount, pid and IPC namespaces.

    Afterwards ``/tmp`` is a private tmpfs of ``tmp_bytes`` and ``/proc`` an empty read-only
    tmpfs, in this process's mount namespace only; the next process it forks is pid 1 of a new
    pid namespace. Raises :class:`IsolationError` when the kernel refuses any step.
    """
    uid, gid = os.getuid(), os.getgid()
    # The jail host is non-dumpable, and a non-dumpable process's /proc/self files belong to
    # root: run as an ordinary user (the container image's uid 10001), it could not write its
    # own setgroups and id maps (EACCES). Dumpable just while it writes them, before any
    # learner process exists; non-dumpable again before anything else happens.
    dumpable = _libc.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0)
    _libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)
    try:
        flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC
        # A runtime may have time namespaces and still refuse a new one (a container's seccomp
        # profile, a sandboxed kernel): the job then runs without its own clocks (it can read
        # the host's uptime, docs/security.md) rather than not at all.
        own_clocks = TIME_NAMESPACES and _libc.unshare(flags | CLONE_NEWTIME) == 0
        if not own_clocks:
            _check(_libc.unshare(flags), "unshare")
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{JOB_UID} {uid} 1")
        _write("/proc/self/gid_map", f"{JOB_GID} {gid} 1")
        if own_clocks:
            # The new time namespace is the next child's: set its clocks before it exists.
            _write("/proc/self/timens_offsets", clock_offsets())
    finally:
        _libc.prctl(_PR_SET_DUMPABLE, 1 if dumpable == 1 else 0, 0, 0, 0)
    # Nothing mounted here may propagate anywhere else.
    _mount("none", "/", None, _MS_REC | _MS_PRIVATE)
    _mount("tmpfs", "/tmp", "tmpfs", _MS_NOSUID | _MS_NODEV, f"size={max(1 << 20, tmp_bytes)},mode=0700")
    # bubblewrap's /proc has locked submounts, so a fresh procfs is refused; cover it instead.
    _mount("tmpfs", "/proc", "tmpfs", _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, "size=4k,mode=0555")


def clock_offsets() -> str:
    """What ``/proc/self/timens_offsets`` is given: the offsets that set ``CLOCK_MONOTONIC`` (1)
    and ``CLOCK_BOOTTIME`` (7) of a new time namespace to within a second of 0 now (an offset
    may not make a clock negative: the whole seconds read now are taken off)."""
    lines = []
    for clock in (time.CLOCK_MONOTONIC, time.CLOCK_BOOTTIME):
        lines.append(f"{clock} {-(time.clock_gettime_ns(clock) // 1_000_000_000)} 0")
    return "\n".join(lines) + "\n"


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_capabilities() -> None:
    """Give up every capability (bounding, ambient, effective, permitted, inheritable) for good.

    Creating a user namespace grants the full set inside it; the learner's process must have none.
    """
    for cap in range(_CAP_LAST + 1):
        # EINVAL past the kernel's last capability is expected; anything else is a failure.
        if _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 22:
            _check(-1, f"drop capability {cap} from the bounding set")
    _libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    _check(_libc.prctl(_PR_SET_SECUREBITS, _SECUREBITS_LOCKED, 0, 0, 0), "lock securebits")
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), ctypes.byref(data)), "capset")
