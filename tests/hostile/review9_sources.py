"""Learner files for review 9's attacks (tests/hostile/test_attack_review9.py).

Two channels between jails that need no clock, neither refused by the seccomp filter:

- **futexes on a shared file.** A futex on a ``MAP_SHARED`` mapping of a file is keyed by the
  file's inode and offset, so every jail that maps the same read-only file of ``/jail`` (the same
  inode in each) shares its futexes. A thread waiting on a word is one bit; another jail reads
  it without waking anyone with ``FUTEX_REQUEUE`` onto the same word, which answers how many
  waiters it moved (0 or 1). :func:`futex_channel` is review 8's flock channel rebuilt on that
  (32 data bits a round, two flags a side).
- **the page cache, read through ``getrusage``.** Touching a page of a mapped file that is not
  cached is a *major* fault (``ru_majflt`` goes up by one); a cached page is not. A job that reads
  chosen pages of files nobody reads leaves bits; a later job reads each once (its probe caches
  the page). :data:`SET_PAGES` and :data:`READ_PAGES` take the pages as ``PAGES``, a list of
  ``(path, page)`` that the test chose among pages not cached (a learner would pick by a salt).
"""

from __future__ import annotations

#: The file whose first page holds every futex word of these attacks (the same inode in every jail).
FUTEX_FILE = "/jail/site/torch/include/ATen/Functions.h"

_FUTEX = r'''
import ctypes as _ct, os as _os, struct as _struct, threading as _th, time as _time

_libc = _ct.CDLL(None, use_errno=True)
_libc.syscall.restype = _ct.c_long
_libc.mmap.restype = _ct.c_void_p
_FFD = _os.open(FUTEX_FILE, _os.O_RDONLY)
_BASE = _libc.mmap(None, _ct.c_size_t(4096), 1, 1, _FFD, _ct.c_long(0))  # PROT_READ, MAP_SHARED
_SYS_FUTEX, _WAIT, _WAKE, _REQUEUE = 202, 0, 1, 3
_on = {}


def _addr(i):
    return _ct.c_void_p(_BASE + 4 * (SLOT + i))


def _held(i):
    """Whether some thread (of any jail) waits on word i: requeued onto itself, nobody wakes."""
    return _libc.syscall(_SYS_FUTEX, _addr(i), _REQUEUE, 0, _ct.c_void_p(1), _addr(i), 0) > 0


def _waiter(i):
    a = _addr(i)
    word = _ct.c_uint32.from_address(a.value).value
    ts = (_ct.c_long * 2)(0, 50_000_000)
    while _on.get(i):
        _libc.syscall(_SYS_FUTEX, a, _WAIT, word, ts, None, 0)


_dead = []  # a word never showed its waiter within a second: no channel here, stop trying


def _set(i, value):
    end = _time.monotonic() + 1.0
    if _dead:
        _on[i] = False
    elif value and not _on.get(i):
        _on[i] = True
        _th.Thread(target=_waiter, args=(i,), daemon=True).start()
        while not _held(i):
            if _time.monotonic() > end:
                _on[i] = False
                _dead.append(i)
                return
            _time.sleep(0.0002)
    elif not value and _on.get(i):
        _on[i] = False
        while _held(i) and _time.monotonic() < end:
            _libc.syscall(_SYS_FUTEX, _addr(i), _WAKE, 0x7FFFFFFF, None, None, 0)
            _time.sleep(0.0002)
'''

#: Review 8's protocol (tests/sandbox/review8_sources.py), 32 bits a round, on futex words.
_CHANNEL = _FUTEX + r'''


def _side(direction):
    base = 36 * direction
    return list(range(base, base + 32)), [base + 32, base + 33], [base + 34, base + 35]


def _wait(cond, deadline):
    while not cond():
        if _time.monotonic() > deadline:
            raise TimeoutError
        _time.sleep(0.001)


def _send(direction, payload, deadline):
    data, s, r = _side(direction)
    payload = _struct.pack("<I", len(payload)) + payload
    payload += b"\0" * (-len(payload) % 4)
    for k in range(len(payload) // 4):
        word = int.from_bytes(payload[4 * k: 4 * k + 4], "little")
        for i in range(32):
            _set(data[i], word >> i & 1)
        _set(s[k % 2], 1)
        _set(s[(k + 1) % 2], 0)
        _wait(lambda: _held(r[k % 2]) and not _held(r[(k + 1) % 2]), deadline)
    for i in data + s:
        _set(i, 0)


def _recv(direction, deadline):
    data, s, r = _side(direction)
    out, k, need = b"", 0, None
    while need is None or len(out) < need:
        _wait(lambda: _held(s[k % 2]) and not _held(s[(k + 1) % 2]), deadline)
        out += sum(_held(data[i]) << i for i in range(32)).to_bytes(4, "little")
        _set(r[k % 2], 1)
        _set(r[(k + 1) % 2], 0)
        k += 1
        if need is None:
            need = 4 + _struct.unpack("<I", out[:4])[0]
    return out[4:need]


def _harness_frame():
    """The frame of sandbox.harness.execute_calls that is calling us (its locals: the calls)."""
    import sys
    f = sys._getframe(1)
    while f is not None and "warmup_calls" not in f.f_locals:
        f = f.f_back
    return f
'''


def futex_channel(slot: int) -> str:
    """:data:`_CHANNEL` on the 72 words of :data:`FUTEX_FILE` from the ``slot``-th."""
    return _CHANNEL.replace("FUTEX_FILE", repr(FUTEX_FILE)).replace("SLOT", str(slot))


def futex_bits_sender(slot: int, pattern: int) -> str:
    """A job that holds a waiter on word ``slot + i`` for each set bit i of a 32-bit ``pattern``."""
    return _FUTEX.replace("FUTEX_FILE", repr(FUTEX_FILE)).replace("SLOT", str(slot)) + f'''
for _i in range(32):
    _set(_i, {pattern} >> _i & 1)
print("HOLDING")
_time.sleep(4.0)
for _i in range(32):
    _set(_i, 0)
def f(x):
    return x
'''


def futex_bits_reader(slot: int) -> str:
    """A job that, a while later, reads the 32 words without waking anyone."""
    return _FUTEX.replace("FUTEX_FILE", repr(FUTEX_FILE)).replace("SLOT", str(slot)) + r'''
_time.sleep(1.5)
print("GOT %x" % sum(_held(_i) << _i for _i in range(32)))
def f(x):
    return x
'''


#: actor-loss with float64 copies (over the memory budget), its measured case computed in the
#: *regular* jail and the digests sent back over the futex channel (review 8's attack, whose
#: flock channel the filter now refuses). Falls back to honest work when the channel fails.
def offloaded_measured_case(slot: int) -> str:
    from tests.sandbox.review8_sources import OFFLOADED_MEASURED_CASE, channel

    flock = channel(0)
    assert flock in OFFLOADED_MEASURED_CASE
    return OFFLOADED_MEASURED_CASE.replace(flock, futex_channel(slot)).replace("5.0", "8.0")


SET_PAGES = r'''
import mmap, os
for path, page in PAGES:
    if BITS >> PAGES.index((path, page)) & 1:
        fd = os.open(path, os.O_RDONLY)
        m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
        m.madvise(mmap.MADV_RANDOM)  # this page alone, no readahead
        m[page * 4096]
        m.close()
        os.close(fd)
print("SET")
def f(x):
    return x
'''

READ_PAGES = r'''
import errno, mmap, os, resource
try:
    resource.getrusage(resource.RUSAGE_SELF)
except OSError as exc:
    print("REFUSED", errno.errorcode.get(exc.errno))
else:
    got = 0
    for i, (path, page) in enumerate(PAGES):
        fd = os.open(path, os.O_RDONLY)
        m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
        m.madvise(mmap.MADV_RANDOM)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_majflt
        m[page * 4096]
        if resource.getrusage(resource.RUSAGE_SELF).ru_majflt == before:  # no disk read: cached
            got |= 1 << i
        m.close()
        os.close(fd)
    print("GOT %x" % got)
def f(x):
    return x
'''

#: One job that tries every cross-job door of review 9's list and prints what each answered, as
#: JSON on its last line: an errno name, or what it got. x86_64 syscall numbers.
PROBE = r'''
import ctypes, errno, json, os, resource, signal, socket

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
out = {}


def sys_(name, nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(nr, *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    out[name] = errno.errorcode.get(ctypes.get_errno(), "ok") if r < 0 else "ok"
    return r


buf = ctypes.create_string_buffer(256)  # zeroed: a futex word that holds 0
sys_("add_key", 248, b"user", b"r9", b"x", 1, -4)  # into the user session keyring
sys_("keyctl", 250, 0, -3, 0)  # KEYCTL_GET_KEYRING_ID of the session keyring
sys_("request_key", 249, b"user", b"r9", None, 0)
sys_("memfd_create", 319, b"r9", 0)
sys_("userfaultfd", 323, 0)
sys_("io_uring_setup", 425, 4, buf)
sys_("perf_event_open", 298, buf, 0, -1, -1, 0)
sys_("bpf", 321, 0, buf, 48)
sys_("cachestat", 451, 0, buf, buf, 0)
sys_("memfd_secret", 447, 0)
sys_("process_madvise", 440, 0, 0, 0, 0, 0)
sys_("pidfd_open", 434, 1, 0)
sys_("kcmp", 312, 1, 2, 0, 0, 0)
sys_("sethostname", 170, b"r9-left-this", 12)
sys_("setdomainname", 171, b"r9", 2)
sys_("sched_setaffinity_init", 203, 1, 8, buf)
sys_("setpriority_init", 141, 0, 1, 19)
sys_("kill_init", 62, 1, 0)
sys_("inotify_init1", 294, 0)
sys_("fanotify_init", 300, 0, 0)
sys_("open_tree", 428, -100, b"/", 0)
sys_("fsopen", 430, b"tmpfs", 0)
sys_("unshare_ipc", 272, 0x08000000)
sys_("syslog_read_all", 103, 3, buf, 256)
sys_("ptrace_attach_init", 101, 16, 1, 0, 0)
sys_("fork", 57)
sys_("futex_shared_wake", 202, buf, 1, 1, 0, 0, 0)  # FUTEX_WAKE without FUTEX_PRIVATE_FLAG
sys_("futex_shared_wait", 202, buf, 0, 1, 0, 0, 0)  # FUTEX_WAIT, the word holds 0, not 1
sys_("futex_private_wake", 202, buf, 129, 1, 0, 0, 0)
sys_("futex_waitv", 449, buf, 1, 0, 0, 0)
sys_("futex_wake2", 454, buf, 1, 1, 130)
sys_("futex_wait2", 455, buf, 1, 1, 130, 0, 0)
sys_("futex_requeue2", 456, buf, 0, 1, 1)
sys_("getrusage_self", 98, 0, buf)
sys_("getrusage_thread", 98, 1, buf)
sys_("getrusage_children", 98, -1, buf)
sys_("sysinfo", 99, buf)
try:
    socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).bind("\0r9-abstract")
    out["abstract_socket"] = "ok"
except OSError as exc:
    out["abstract_socket"] = errno.errorcode.get(exc.errno, str(exc.errno))
for path in ("/dev/shm/r9", "/dev/r9", "/r9", "/jail/r9", "/dev/mqueue/r9"):
    try:
        with open(path, "w") as fh:
            fh.write("x")
        out["write " + path] = "ok"
    except OSError as exc:
        out["write " + path] = errno.errorcode.get(exc.errno, str(exc.errno))
out["proc"] = sorted(os.listdir("/proc"))
out["sys"] = os.path.exists("/sys")
fds = []
for fd in range(1024):
    try:
        os.fstat(fd)
        fds.append(fd)
    except OSError:
        pass
out["fds"] = fds
out["env"] = sorted(os.environ)
out["hostname"] = os.uname().nodename
out["children_rusage"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
print("PROBE " + json.dumps(out))
def f(x):
    return x
'''

#: A job that leaves System V and POSIX IPC objects under fixed names and keys, and then a job
#: that looks for them (a later job on the same host, or one running at once on another).
IPC_LEAVE = r'''
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
made = {}
for name, nr, args in (("shm", 29, (0x52390009, 4096, 0o1666)), ("msg", 68, (0x52390009, 0o1666)),
                       ("sem", 64, (0x52390009, 1, 0o1666)), ("mq", 240, (b"/r9-left", 0o102, 0o666, None))):
    ctypes.set_errno(0)
    r = libc.syscall(nr, *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    made[name] = "ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno())
print("MADE", made)
def f(x):
    return x
'''
IPC_FIND = r'''
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
found = {}
for name, nr, args in (("shm", 29, (0x52390009, 0, 0)), ("msg", 68, (0x52390009, 0)),
                       ("sem", 64, (0x52390009, 0, 0)), ("mq", 240, (b"/r9-left", 2, 0, None))):
    ctypes.set_errno(0)
    r = libc.syscall(nr, *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    found[name] = r >= 0
print("FOUND", sorted(k for k, v in found.items() if v))
def f(x):
    return x
'''

#: A job that starts 48 idle threads a second after it begins and holds them 1.5 s, and one
#: that reads ``sysinfo``'s machine-wide thread count (``procs``) every 0.1 s meanwhile.
THREADS_HELD = r'''
import threading, time
time.sleep(1.0)
_ev = threading.Event()
_ts = [threading.Thread(target=_ev.wait) for _ in range(48)]
for _t in _ts:
    _t.start()
time.sleep(1.5)
_ev.set()
def f(x):
    return x
'''
PROCS_SAMPLED = r'''
import ctypes, time
class _SI(ctypes.Structure):
    _fields_ = [("uptime", ctypes.c_long), ("loads", ctypes.c_ulong * 3), ("totalram", ctypes.c_ulong),
                ("freeram", ctypes.c_ulong), ("sharedram", ctypes.c_ulong), ("bufferram", ctypes.c_ulong),
                ("totalswap", ctypes.c_ulong), ("freeswap", ctypes.c_ulong), ("procs", ctypes.c_ushort),
                ("pad", ctypes.c_ushort), ("totalhigh", ctypes.c_ulong), ("freehigh", ctypes.c_ulong),
                ("mem_unit", ctypes.c_uint), ("_f", ctypes.c_char * 8)]
_libc = ctypes.CDLL(None, use_errno=True)
_si = _SI()
_procs = []
for _ in range(35):
    if _libc.sysinfo(ctypes.byref(_si)) != 0:
        break
    _procs.append(_si.procs)
    time.sleep(0.1)
print("PROCS", _procs)
def f(x):
    return x
'''


def import_error_from_the_other_jail(slot: int) -> str:
    """Review 8's import-phase verdict chosen from the other jail's inputs, on futex words: the
    first jail to import holds word 72 (its role; each waits a random moment first, so the two
    seldom look at once), the second raises at import one of 16 types
    from one of 16 lines, spelling a byte of what the first was given."""
    from tests.sandbox.review8_sources import IMPORT_ERROR_FROM_THE_OTHER_JAIL, channel

    flock, role = channel(200), (
        "try:\n    _fcntl.flock(_ROLE, _fcntl.LOCK_EX | _fcntl.LOCK_NB)\n    _FIRST = True\n"
        "except BlockingIOError:\n    _FIRST = False\n"
    )
    assert flock in IMPORT_ERROR_FROM_THE_OTHER_JAIL and role in IMPORT_ERROR_FROM_THE_OTHER_JAIL
    return IMPORT_ERROR_FROM_THE_OTHER_JAIL.replace(flock, futex_channel(slot)).replace(
        role, "import random as _rnd\n_time.sleep(_rnd.random() * 0.3)  # two jails seldom look at once\n"
        "_FIRST = not _held(72)\nif _FIRST:\n    _set(72, 1)\n"
    )
