"""A seccomp-BPF syscall filter for the learner's child process, built with ctypes alone.

Denied (EPERM): sockets, ptrace and cross-process memory access, namespaces and mounts,
new programs and processes (clone is allowed only for threads), io_uring, bpf, keyrings,
userfaultfd, memfd, inotify and fanotify (watching the shared read-only files would show when
concurrent jobs open them: a timing side channel; nothing the grader runs uses them), and
signals to any process but the child itself. Locks and watches on files (``flock``; ``fcntl``'s
record locks, open-file-description locks, leases and dnotify ``F_NOTIFY``) are denied: the
files of ``/jail`` are the same inodes in every jail, so one lock is one bit another jail reads
at once (review 8). So is the page cache's state of those files: ``fadvise64`` (``DONTNEED``
evicts a shared file's pages), ``readahead``, ``mincore`` (a mapped shared file's resident
pages), ``cachestat`` (440+, so ENOSYS), and
``preadv2``/``pwritev2`` with ``RWF_NOWAIT`` (which tells a cached page from one that is not,
without timing) answer EPERM; ``madvise`` may not page out or cool pages (``MADV_COLD``,
``MADV_PAGEOUT``), and ``getrusage`` answers only for ``RUSAGE_CHILDREN`` (of the child itself it
would show major faults: whether a page of a shared file was cached, review 9). ``futex`` is
allowed only with ``FUTEX_PRIVATE_FLAG``: a shared futex on a mapping of a ``/jail`` file is keyed
by the inode, the same in every jail, so a waiter was a bit another jail counted with
``FUTEX_REQUEUE`` (review 9); shared ones answer EINVAL, and the futex2 calls (449, 454-456)
ENOSYS. ``sysinfo`` (the machine's thread count and free memory) answers EPERM. ``statfs``, ``fstatfs``
and ``ustat`` (a filesystem's size and free blocks: the system folders are the host's disk)
answer ENOSYS and ``quotactl`` EPERM (review 11). What is left
between concurrent jobs is timing (docs/security.md). Calls that act on another
process by pid (``prlimit64``, ``setpriority``, the ``sched_set*`` family, ``ioprio_set``,
``migrate_pages``, ``move_pages``, ``get_robust_list``) are allowed only on the child itself
(pid 0 or its own), and ``fcntl`` may not name a process to signal (``F_SETOWN``,
``F_SETOWN_EX``, ``F_SETSIG``). Per-user quotas, one for every jail's jobs (review 10): the POSIX
message queue calls (``mq_*``) answer EPERM (``RLIMIT_MSGQUEUE`` is 0 too, ``sandbox.host``), and
``fcntl`` may neither grow nor read a pipe's size (``F_SETPIPE_SZ``, ``F_GETPIPE_SZ``: the pages of
every pipe count against ``fs.pipe-user-pages-soft`` of the outer user); queued signals are capped
by ``RLIMIT_SIGPENDING`` in ``sandbox.host``. Syscalls numbered 440 and up (added after the rest of this list
was written) are refused with ENOSYS unless allowed by name. ``clone3`` answers ENOSYS so glibc falls back to ``clone``,
whose flags a classic BPF filter can inspect. A wrong architecture, or the x32 ABI, kills the
process.

The child is already pid 1 of a pid namespace of its own, so no other pid resolves; the filter
is defence in depth. It is hand-written classic BPF (about 300 instructions) rather than
libseccomp: the project's interpreter is not Debian's, so Debian's python3-seccomp bindings do
not load in it, and the PyPI wrapper (pyseccomp) is an unmaintained ctypes shim that still needs
libseccomp installed. Every rule is exercised by the hostile test suite.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

# BPF opcodes (linux/filter.h, linux/bpf_common.h)
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06

_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_RET_ALLOW = 0x7FFF0000

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_CLONE_THREAD = 0x00010000

# offsets in struct seccomp_data
_NR = 0
_ARCH = 4
_ARG0_LO = 16  # little-endian: the low 32 bits of args[0]


def _arg_lo(i: int) -> int:
    """Offset of the low 32 bits of args[i] (little-endian)."""
    return _ARG0_LO + 8 * i


#: fcntl commands refused: those that name a process to signal (F_SETOWN 8, F_SETSIG 10,
#: F_SETOWN_EX 15); record locks (F_GETLK 5, F_SETLK 6, F_SETLKW 7, and the 32-bit LK64 numbers
#: 12-14); open-file-description locks (F_OFD_GETLK 36, F_OFD_SETLK 37, F_OFD_SETLKW 38);
#: leases (F_SETLEASE 1024, F_GETLEASE 1025) and dnotify (F_NOTIFY 1026). A lock on a shared
#: read-only file is visible to every jail at once: a covert channel, one bit per file. Pipe
#: sizes (F_SETPIPE_SZ 1031, F_GETPIPE_SZ 1032): the pages of every pipe buffer count against one
#: quota of the outer user (``fs.pipe-user-pages-soft``), the same for every jail, so how far a
#: pipe could grow read what another jail held (review 10).
_FCNTL_DENIED_COMMANDS = (5, 6, 7, 8, 10, 12, 13, 14, 15, 36, 37, 38, 1024, 1025, 1026, 1031, 1032)
#: preadv2/pwritev2 flag that fails instead of waiting for I/O: a probe of the page cache.
_RWF_NOWAIT = 0x08
#: madvise advice that evicts or ages pages (MADV_COLD 20, MADV_PAGEOUT 21).
_MADV_DENIED = (20, 21)
#: Syscalls from 440 on share one number on every architecture. A deny list cannot know the
#: calls added after it was written (listmount and statmount reveal the host's mount table), so
#: from 440 on only these are allowed, and every other number answers ENOSYS (so that libc falls
#: back to an older call): epoll_pwait2, fchmodat2, mseal. Not cachestat (451): it reads the page
#: cache's state of a shared file. Not the futex2 calls (futex_waitv 449, futex_wake 454,
#: futex_wait 455, futex_requeue 456): futex_waitv and futex_requeue carry their flags in memory
#: the filter cannot read, and glibc uses none of them.
_NEW_SYSCALLS_FROM = 440
_NEW_SYSCALLS_ALLOWED = (441, 452, 462)
#: futex op flag: the futex is keyed by (address space, address), so it names nothing outside the
#: job. Without it a futex on a file mapping is keyed by the file's inode and offset, and the
#: files of /jail are the same inodes in every jail (review 9).
_FUTEX_PRIVATE_FLAG = 128
#: getrusage's only allowed target: RUSAGE_CHILDREN (-1; the child has none). RUSAGE_SELF and
#: RUSAGE_THREAD would show major faults and block reads: whether a page of a shared file was
#: cached (review 9).
_RUSAGE_CHILDREN = -1
#: Calls that tell a filesystem's size and free blocks and inodes (``statvfs``, ``df``): the
#: read-only system folders are binds of the host's root filesystem, so they read the host disk's
#: usage, which moves with whatever the host writes (another learner's stored verdict included):
#: a slow channel and machine state without a clock (review 11). They answer ENOSYS (``quotactl``,
#: a user's usage on a filesystem, EPERM with the denied calls).
_FILESYSTEM_USAGE = ("statfs", "fstatfs", "ustat")

_ARCHES = {
    "x86_64": (
        0xC000003E,
        {
            "socket": 41,
            "socketpair": 53,
            "connect": 42,
            "bind": 49,
            "listen": 50,
            "ptrace": 101,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "mount": 165,
            "umount2": 166,
            "unshare": 272,
            "setns": 308,
            "chroot": 161,
            "pivot_root": 155,
            "bpf": 321,
            "perf_event_open": 298,
            "keyctl": 250,
            "add_key": 248,
            "request_key": 249,
            "userfaultfd": 323,
            "fork": 57,
            "vfork": 58,
            "execve": 59,
            "execveat": 322,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
            "memfd_create": 319,
            "personality": 135,
            "pidfd_open": 434,
            "pidfd_getfd": 438,
            "pidfd_send_signal": 424,
            "tkill": 200,
            "kexec_load": 246,
            "init_module": 175,
            "finit_module": 313,
            "acct": 163,
            "swapon": 167,
            "reboot": 169,
            "open_by_handle_at": 304,
            "name_to_handle_at": 303,
            "fsopen": 430,
            "fsmount": 432,
            "move_mount": 429,
            "open_tree": 428,
            "inotify_init": 253,
            "inotify_init1": 294,
            "inotify_add_watch": 254,
            "fanotify_init": 300,
            "flock": 73,
            "fadvise64": 221,
            "readahead": 187,
            "mincore": 27,
            "sysinfo": 99,
            "mq_open": 240,
            "mq_unlink": 241,
            "mq_timedsend": 242,
            "mq_timedreceive": 243,
            "mq_notify": 244,
            "mq_getsetattr": 245,
            "quotactl": 179,
        },
        {
            "clone": 56,
            "clone3": 435,
            "kill": 62,
            "tgkill": 234,
            "rt_sigqueueinfo": 129,
            "rt_tgsigqueueinfo": 297,
            "fcntl": 72,
            "preadv2": 327,
            "pwritev2": 328,
            "madvise": 28,
            "futex": 202,
            "getrusage": 98,
            "statfs": 137,
            "fstatfs": 138,
            "ustat": 136,
        },
        {
            "prlimit64": (302, 0),
            "setpriority": (141, 1),
            "sched_setaffinity": (203, 0),
            "sched_setscheduler": (144, 0),
            "sched_setparam": (142, 0),
            "sched_setattr": (314, 0),
            "ioprio_set": (251, 1),
            "migrate_pages": (256, 0),
            "move_pages": (279, 0),
            "get_robust_list": (274, 0),
            "process_madvise": (440, None),
            "process_mrelease": (448, None),
            "kcmp": (312, None),
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "socket": 198,
            "socketpair": 199,
            "connect": 203,
            "bind": 200,
            "listen": 201,
            "ptrace": 117,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "mount": 40,
            "umount2": 39,
            "unshare": 97,
            "setns": 268,
            "chroot": 51,
            "pivot_root": 41,
            "bpf": 280,
            "perf_event_open": 241,
            "keyctl": 219,
            "add_key": 217,
            "request_key": 218,
            "userfaultfd": 282,
            "execve": 221,
            "execveat": 281,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
            "memfd_create": 279,
            "personality": 92,
            "pidfd_open": 434,
            "pidfd_getfd": 438,
            "pidfd_send_signal": 424,
            "tkill": 130,
            "kexec_load": 104,
            "init_module": 105,
            "finit_module": 273,
            "acct": 89,
            "swapon": 224,
            "reboot": 142,
            "open_by_handle_at": 265,
            "name_to_handle_at": 264,
            "fsopen": 430,
            "fsmount": 432,
            "move_mount": 429,
            "open_tree": 428,
            "inotify_init1": 26,
            "inotify_add_watch": 27,
            "fanotify_init": 262,
            "flock": 32,
            "fadvise64": 223,
            "readahead": 213,
            "mincore": 232,
            "sysinfo": 179,
            "mq_open": 180,
            "mq_unlink": 181,
            "mq_timedsend": 182,
            "mq_timedreceive": 183,
            "mq_notify": 184,
            "mq_getsetattr": 185,
            "quotactl": 60,
        },
        {
            "clone": 220,
            "clone3": 435,
            "kill": 129,
            "tgkill": 131,
            "rt_sigqueueinfo": 138,
            "rt_tgsigqueueinfo": 240,
            "fcntl": 25,
            "preadv2": 286,
            "pwritev2": 287,
            "madvise": 233,
            "futex": 98,
            "getrusage": 165,
            "statfs": 43,
            "fstatfs": 44,
        },
        {
            "prlimit64": (261, 0),
            "setpriority": (140, 1),
            "sched_setaffinity": (122, 0),
            "sched_setscheduler": (119, 0),
            "sched_setparam": (118, 0),
            "sched_setattr": (274, 0),
            "ioprio_set": (30, 1),
            "migrate_pages": (238, 0),
            "move_pages": (239, 0),
            "get_robust_list": (100, 0),
            "process_madvise": (440, None),
            "process_mrelease": (448, None),
            "kcmp": (272, None),
        },
    ),
}


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k & 0xFFFFFFFF)


def _ret(value: int) -> bytes:
    return _insn(_RET_K, 0, 0, value)


def _only_values(nr: int, arg: int, allowed: list[int], eperm: bytes) -> list[bytes]:
    """Instructions: for syscall ``nr``, allow only when args[arg] is one of ``allowed``."""
    block = [_insn(_LD_W_ABS, 0, 0, _arg_lo(arg))]
    for i, value in enumerate(allowed):
        # jump over the remaining compares and the EPERM to the ALLOW
        block.append(_insn(_JEQ_K, len(allowed) - i, 0, value))
    block += [eperm, _ret(_RET_ALLOW)]
    return [_insn(_LD_W_ABS, 0, 0, _NR), _insn(_JEQ_K, 0, len(block), nr)] + block


def _refuse_values(nr: int, arg: int, refused: tuple[int, ...], eperm: bytes) -> list[bytes]:
    """Instructions: for syscall ``nr``, EPERM when args[arg] is one of ``refused``, else allow."""
    block = [_insn(_LD_W_ABS, 0, 0, _arg_lo(arg))]
    for i, value in enumerate(refused):
        # jump over the remaining compares and the ALLOW to the EPERM
        block.append(_insn(_JEQ_K, len(refused) - i, 0, value))
    block += [_ret(_RET_ALLOW), eperm]
    return [_insn(_LD_W_ABS, 0, 0, _NR), _insn(_JEQ_K, 0, len(block), nr)] + block


def build_filter(own_pid: int, machine: str | None = None) -> bytes:
    """Return the BPF program (raw ``sock_filter`` array) for a child whose pid is ``own_pid``.

    ``own_pid`` is the pid as the child sees it: signals to it, to its own process group
    (``-own_pid``) or to ``0`` are allowed; any other target answers EPERM.
    """
    machine = machine or platform.machine()
    if machine not in _ARCHES:
        raise OSError(f"no seccomp syscall table for {machine}")
    audit_arch, denied, special, by_pid = _ARCHES[machine]
    eperm = _ret(_RET_ERRNO | errno.EPERM)
    prog = [
        _insn(_LD_W_ABS, 0, 0, _ARCH),
        _insn(_JEQ_K, 1, 0, audit_arch),
        _ret(_RET_KILL_PROCESS),
        _insn(_LD_W_ABS, 0, 0, _NR),
    ]
    if machine == "x86_64":  # the x32 ABI numbers syscalls from 0x40000000: refuse it whole
        prog += [_insn(_JGE_K, 0, 1, 0x40000000), _ret(_RET_KILL_PROCESS)]
    for nr in sorted(denied.values()):
        prog += [_insn(_JEQ_K, 0, 1, nr), eperm]
    prog += [_insn(_JEQ_K, 0, 1, special["clone3"]), _ret(_RET_ERRNO | errno.ENOSYS)]
    # A filesystem's size and free blocks: ENOSYS, which glibc's pathconf takes for "use the
    # default" (EPERM would fail it). aarch64 has no ustat.
    for name in _FILESYSTEM_USAGE:
        if name in special:
            prog += [_insn(_JEQ_K, 0, 1, special[name]), _ret(_RET_ERRNO | errno.ENOSYS)]
    # Calls newer than this filter: an allow list (the A register still holds the number).
    allowed_new = list(_NEW_SYSCALLS_ALLOWED)
    prog.append(_insn(_JGE_K, 0, len(allowed_new) + 2, _NEW_SYSCALLS_FROM))
    for i, nr in enumerate(allowed_new):
        prog.append(_insn(_JEQ_K, len(allowed_new) - i, 0, nr))
    prog += [_ret(_RET_ERRNO | errno.ENOSYS), _ret(_RET_ALLOW)]
    # clone: threads only. After the load A holds the flags; both branches return.
    prog += [
        _insn(_JEQ_K, 0, 4, special["clone"]),
        _insn(_LD_W_ABS, 0, 0, _ARG0_LO),
        _insn(_JSET_K, 0, 1, _CLONE_THREAD),
        _ret(_RET_ALLOW),
        eperm,
    ]
    # Signals: only to the child itself. kill(pid), tgkill(tgid, ...), rt_sigqueueinfo(tgid, ...)
    # (pid 1 of its namespace, -1 would mean "every process": never a target)
    targets = [own_pid, 0] + ([-own_pid] if own_pid != 1 else [])
    for name in ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"):
        prog += _only_values(special[name], 0, targets, eperm)
    # Calls that act on a process by pid: only on the child itself; some never.
    for nr, arg in by_pid.values():
        if arg is None:
            prog += [_insn(_LD_W_ABS, 0, 0, _NR), _insn(_JEQ_K, 0, 1, nr), eperm]
        else:
            prog += _only_values(nr, arg, [0, own_pid], eperm)
    # fcntl: never name a process to signal, lock or watch a file; madvise: never evict pages.
    for name, refused in (("fcntl", _FCNTL_DENIED_COMMANDS), ("madvise", _MADV_DENIED)):
        prog += _refuse_values(special[name], 1 if name == "fcntl" else 2, refused, eperm)
    # preadv2/pwritev2 (fd, iov, iovcnt, pos_l, pos_h, flags): never RWF_NOWAIT.
    for name in ("preadv2", "pwritev2"):
        block = [_insn(_LD_W_ABS, 0, 0, _arg_lo(5)), _insn(_JSET_K, 0, 1, _RWF_NOWAIT), eperm, _ret(_RET_ALLOW)]
        prog += [_insn(_LD_W_ABS, 0, 0, _NR), _insn(_JEQ_K, 0, len(block), special[name])] + block
    # futex(uaddr, op, ...): only private futexes. A shared one answers EINVAL, the error glibc's
    # futex wrappers tolerate (EPERM and ENOSYS are fatal there): a wait returns at once and its
    # caller checks its word again (pthread_join and process-shared objects then spin), a wake
    # is ignored.
    block = [
        _insn(_LD_W_ABS, 0, 0, _arg_lo(1)),
        _insn(_JSET_K, 0, 1, _FUTEX_PRIVATE_FLAG),
        _ret(_RET_ALLOW),
        _ret(_RET_ERRNO | errno.EINVAL),
    ]
    prog += [_insn(_LD_W_ABS, 0, 0, _NR), _insn(_JEQ_K, 0, len(block), special["futex"])] + block
    # getrusage: only of the (absent) children.
    prog += _only_values(special["getrusage"], 0, [_RUSAGE_CHILDREN], eperm)
    prog.append(_ret(_RET_ALLOW))
    return b"".join(prog)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(own_pid: int) -> None:
    """Set no-new-privileges and install the filter on the calling process (irreversible)."""
    libc = ctypes.CDLL(None, use_errno=True)
    program = build_filter(own_pid)
    buf = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")
