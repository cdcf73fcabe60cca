"""Learner files for review 10's attacks (tests/hostile/test_attack_review10.py).

Every jail's job runs as the same user outside its namespaces, and the kernel keeps some limits
per user, shared by every process of that user, whatever its namespaces: the signals queued and
not yet delivered (``RLIMIT_SIGPENDING``), the bytes of POSIX message queues
(``RLIMIT_MSGQUEUE``) and the pages of pipe buffers (``fs.pipe-user-pages-soft``, beyond which
``F_SETPIPE_SZ`` is refused). One job that holds part of a quota leaves less for another job that
runs at once: the other reads how much, without any clock, by taking what is left and giving it
back. :data:`QUOTAS` is that reading in learner code, ``_take()`` -> (signals, queues, pipes).
"""

from __future__ import annotations

#: ``_take(hold, most)``: queue real-time signals to itself until refused, open 8 KiB x 10 message
#: queues until refused, and grow pipes to 1 MiB until refused (at most ``most`` of each); return
#: the three counts. With ``hold`` False everything is given back before it returns.
QUOTAS = r'''
import ctypes as _ctypes, fcntl as _fcntl, os as _os, signal as _signal, time as _time

_libc = _ctypes.CDLL(None, use_errno=True)


class _Sigval(_ctypes.Union):
    _fields_ = [("i", _ctypes.c_int), ("p", _ctypes.c_void_p)]


class _MqAttr(_ctypes.Structure):
    _fields_ = [("flags", _ctypes.c_long), ("maxmsg", _ctypes.c_long), ("msgsize", _ctypes.c_long),
                ("cur", _ctypes.c_long), ("pad", _ctypes.c_long * 4)]


_SIG = _signal.SIGRTMIN + 3
_signal.pthread_sigmask(_signal.SIG_BLOCK, [_SIG])
_round = [0]


def _take(hold, most=(200000, 100, 120)):
    _round[0] += 1
    signals = 0
    while signals < most[0] and _libc.sigqueue(_os.getpid(), _SIG, _Sigval(1)) == 0:
        signals += 1
    queues = []
    while len(queues) < most[1]:
        name = f"/r10-{_round[0]}-{len(queues)}".encode()
        fd = _libc.mq_open(name, _os.O_CREAT | _os.O_RDWR, 0o600, _ctypes.byref(_MqAttr(0, 10, 8192, 0)))
        if fd < 0:
            break
        queues.append((name, fd))
    pipes = []
    while len(pipes) < most[2]:
        try:
            r, w = _os.pipe()
        except OSError:  # out of descriptors
            break
        try:
            _fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ
        except OSError:
            _os.close(r)
            _os.close(w)
            break
        pipes.append((r, w))
    if not hold:
        _signal.signal(_SIG, _signal.SIG_IGN)  # discards the pending ones
        _signal.signal(_SIG, _signal.SIG_DFL)
        for name, fd in queues:
            _os.close(fd)
            _libc.mq_unlink(name)
        for r, w in pipes:
            _os.close(r)
            _os.close(w)
    return signals, len(queues), len(pipes)
'''

#: Holds part of each quota (60,000 signals, 5 queues, 30 pipes: about half of each here) for 4.5 s,
#: then answers (``f(x) = x``). Not all of it: jobs of other tests may run at the same time.
HOLDER = QUOTAS + r'''
print("HOLDING %d %d %d" % _take(True, (60000, 5, 30)))
_time.sleep(4.5)
def f(x):
    return x
'''

#: Reads the three quotas 6 times over 2.4 s and prints the smallest reading of each.
PROBE = QUOTAS + r'''
_least = None
for _ in range(6):
    _got = _take(False)
    _least = _got if _least is None else tuple(min(a, b) for a, b in zip(_least, _got))
    _time.sleep(0.4)
print("GOT %d %d %d" % _least)
def f(x):
    return x
'''

#: Stores what it can in pipe buffers (F_SETPIPE_SZ 1 MiB) and says how much; kernel memory
#: a job holds must count against its memory cgroup.
PIPE_HOARD = r'''
import fcntl, os
stored, pipes = 0, []
for _ in range(120):
    r, w = os.pipe()
    try:
        fcntl.fcntl(w, 1031, 1 << 20)
    except OSError:
        pass
    os.set_blocking(w, False)
    try:
        while True:
            stored += os.write(w, b"x" * 65536)
    except BlockingIOError:
        pass
    pipes.append((r, w))
print("STORED", stored)
def f(x):
    return x
'''
