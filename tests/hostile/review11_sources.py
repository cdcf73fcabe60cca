"""Learner sources of review 11's attacks (tests/hostile/test_attack_review11.py). Each prints
what it found on a line of its own (``WORD values``), so the tests read counted facts."""

from __future__ import annotations

#: Leaves a marker in every place a job may write, then a later job looks for it.
LEAVE = r"""
import os
for path in ("/tmp/review11-left", "/tmp/tmp/review11-left", os.path.expanduser("~") + "/review11-left"):
    try:
        with open(path, "w") as fh:
            fh.write("left")
        print("LEFT", path)
    except OSError as exc:
        print("REFUSED", path, exc.errno)
def f(x):
    return x
"""

FIND = r"""
import os
found = []
for root in ("/tmp", os.path.expanduser("~"), "/dev/shm", "/var/tmp"):
    try:
        for dirpath, dirs, files in os.walk(root):
            found += [os.path.join(dirpath, n) for n in files if "review11" in n]
    except OSError:
        pass
print("FOUND", len(found), *found)
def f(x):
    return x
"""

#: Signals everything it can name but itself: init (pid 1), every pid, its process group.
SIGNALS = r"""
import os, signal
hits = 0
for target in (1, -1, 0, 2, 3, 100):
    if target == os.getpid():
        continue
    try:
        os.kill(target, signal.SIGCONT)
        hits += 1
        print("SIGNALLED", target)
    except OSError as exc:
        print("NOSIGNAL", target, exc.errno)
print("HITS", hits)
def f(x):
    return x
"""

#: Memory held outside the heap: a tmpfs file in /tmp, mapped and touched, and a SysV segment.
HIDE_MEMORY = r"""
import ctypes, mmap, os
MiB = 1 << 20
held = 0
fd = os.open("/tmp/review11-ballast", os.O_RDWR | os.O_CREAT, 0o600)
try:
    os.ftruncate(fd, 4 * MiB)
    m = mmap.mmap(fd, 4 * MiB)
    for i in range(0, 4 * MiB, 4096):
        m[i] = 1
    held += 4 * MiB
except OSError as exc:
    print("TMPFS", exc)
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
shm = libc.shmget(0, 48 * MiB, 0o1600)
if shm >= 0:
    addr = libc.shmat(shm, None, 0)
    if addr not in (None, ctypes.c_void_p(-1).value):
        ctypes.memset(addr, 1, 48 * MiB)
        held += 48 * MiB
    libc.shmctl(shm, 0, None)  # IPC_RMID: gone once detached
else:
    print("SHM", ctypes.get_errno())
print("HELD", held)
def f(x):
    return x
"""

#: Eight threads that spin: RLIMIT_CPU counts the whole process, the cgroup every thread.
THREADS_SPIN = r"""
import threading
def spin():
    while True:
        pass
for _ in range(8):
    threading.Thread(target=spin, daemon=True).start()
def f(x):
    while True:
        pass
"""

#: Ignores the signals the soft CPU and file-size limits send, then keeps going.
IGNORE_LIMIT_SIGNALS = r"""
import os, signal
signal.signal(signal.SIGXCPU, signal.SIG_IGN)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
written = 0
try:
    with open("/tmp/review11-big", "wb") as fh:
        chunk = b"x" * (1 << 20)
        for _ in range(512):
            fh.write(chunk)
            written += len(chunk)
except OSError as exc:
    print("FSIZE", exc.errno)
print("WROTE", written)
def f(x):
    while True:
        pass
"""

#: Stops itself again and again after the inputs came: each stop is a question to init.
STOPS = r"""
import os, signal
def f(x):
    for _ in range(50):
        os.kill(os.getpid(), signal.SIGSTOP)
    print("STOPPED 50")
    return x
"""

#: Floods stdout and stderr with terminal escapes, NULs and bidi controls (32 MiB each).
FLOOD = r"""
import os
bad = ("\x1b[2J\x1b]0;owned\x07\x00\u202e\ud800".encode("utf-8", "surrogatepass")) * 4096
for _ in range(32 * 1024 * 1024 // len(bad)):
    os.write(1, bad)
    os.write(2, bad)
def f(x):
    return x
"""

#: Says what the filesystems it can name hold: totals and free blocks and inodes.
STATVFS = r"""
import os
for path in ("/", "/tmp", "/usr", "/etc", "/dev", os.path.dirname(os.__file__)):
    try:
        s = os.statvfs(path)
        print("STATVFS", path, s.f_blocks, s.f_bfree, s.f_files, s.f_ffree)
    except OSError as exc:
        print("NOSTAT", path, exc.errno)
def f(x):
    return x
"""

HONEST = r"""
import torch


def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    if log_probs_old.shape != log_probs_new.shape or advantages.shape != log_probs_new.shape:
        raise ValueError("shapes differ")
    ratio = torch.exp(log_probs_new - log_probs_old)
    clipped = torch.clamp(ratio, 1.0 - clip_range, 1.0 + clip_range)
    return -torch.min(ratio * advantages, clipped * advantages).mean()
"""

#: A valid file of 32 KiB (half the cap, to keep the test short; cost grows with the square):
#: one statement of ~10,600 adjacent empty string literals (a docstring, as the similarity
#: normaliser sees it), then an honest solution.
STRING_BOMB = "'' " * ((32 * 1024 - 1024) // 3) + "\n" + HONEST

#: Raises, at each call, an exception whose class name holds terminal escapes and bidi overrides,
#: and whose 2 MB message holds them too, with NULs and lone surrogates.
HOSTILE_EXCEPTION = r"""
BAD = "\x1b[2J\x1b]8;;http://evil/\x07\u202e\u2066\r\n"
Boom = type("Boom" + BAD * 8, (ValueError,), {})
def compute_actor_loss(*args, **kwargs):
    raise Boom((BAD + "\x00\ud800") * (1 << 16))
"""

#: Writes a result file claiming success at import, then ends the process before the harness runs.
FORGED_RESULT = r"""
import json, os
with open("/tmp/job/result.json", "w") as fh:
    json.dump({"status": "ok", "calls": []}, fh)
os._exit(0)
"""


#: Looks for another learner's marker in every regular file under 1 MB it can read (file names
#: only under /jail), and in its own environment, then gives an honest answer.
def snoop(marker: str) -> str:
    return (
        r'''
import os
MARK = "'''
        + marker[:8]
        + '" + "'
        + marker[8:]
        + r""""
hits = [k for k, v in os.environ.items() if MARK in k or MARK in v]
hits += [n for _, _, files in os.walk("/jail") for n in files if MARK in n]
for root in ("/tmp", "/dev", "/etc", "/root"):
    for dirpath, dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            try:
                if os.path.isfile(path) and not os.path.islink(path) and os.path.getsize(path) < (1 << 20):
                    with open(path, "rb") as fh:
                        if MARK.encode() in fh.read():
                            hits.append(path)
            except OSError:
                pass
print("SNOOPED", len(hits), *hits)
"""
        + HONEST
    )


#: Tries to raise each resource limit past its hard limit, and the hard limits to infinity.
RLIMITS = r"""
import resource
raised = []
for name in ("RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_AS", "RLIMIT_SIGPENDING", "RLIMIT_MSGQUEUE",
             "RLIMIT_CORE", "RLIMIT_NPROC", "RLIMIT_MEMLOCK", "RLIMIT_STACK"):
    which = getattr(resource, name)
    soft, hard = resource.getrlimit(which)
    for want in ((hard, hard), (resource.RLIM_INFINITY, resource.RLIM_INFINITY)):
        if hard == resource.RLIM_INFINITY or want[1] == hard:
            continue
        try:
            resource.setrlimit(which, want)
            raised.append(name)
        except (OSError, ValueError):
            pass
print("RAISED", len(raised), *raised)
def f(x):
    return x
"""
