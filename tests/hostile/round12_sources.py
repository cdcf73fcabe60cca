"""Learner files for tests/hostile/test_attack_round12.py (round 12 red team).

Each builder returns the text of a submission. The "probe-aware" ones carry a fingerprint of the
judge's diagnostic probe inputs: the sum of each probe case's first tensor. A real attacker
learns it without the secret, a bit per submission, from the mistakes the report names (the
probe set is fixed per exercise version and named mistakes depend only on the learner's outputs
on it); the test computes it from the suite's secret to stand for that knowledge.
"""

from __future__ import annotations

#: The learner's dispatcher: ``_probe`` for every call of a visit whose first call's first tensor
#: sums to a known probe fingerprint (the probe visit), ``_graded`` otherwise; both are whole submissions exec'd in namespaces of their own.
_DISPATCH = """
import torch as _torch

_FINGERPRINTS = {fingerprints!r}
_SLEEP = {sleep!r}
_slept = []
_mode = []


def _load(text):
    ns = {{}}
    exec(compile(text, "<part>", "exec"), ns)
    return ns[{name!r}]


_graded = _load({graded!r})
_probe = _load({probe!r})


def _is_probe(args):
    first = args[0] if args else None
    if not isinstance(first, _torch.Tensor) or not first.is_floating_point():
        return False
    return round(float(first.detach().double().sum()), 6) in _FINGERPRINTS


def {name}(*args, **kwargs):
    if _SLEEP and not _slept:
        import time
        _slept.append(1)
        time.sleep(_SLEEP)
    if not _mode:  # the visit's first call decides: the probe visit, or a graded one
        _mode.append(_is_probe(args))
    return (_probe if _mode[0] else _graded)(*args, **kwargs)
"""


def dispatcher(name: str, graded: str, probe: str, fingerprints: set[float], sleep: float = 0.0) -> str:
    """A submission that behaves as ``graded`` in a graded visit and as ``probe`` in the probe visit,
    after sleeping ``sleep`` seconds on its first call (in every visit)."""
    return _DISPATCH.format(fingerprints=sorted(fingerprints), sleep=sleep, name=name, graded=graded, probe=probe)


#: Reads the job's clocks: CLOCK_MONOTONIC and CLOCK_BOOTTIME are the host's (no time namespace).
CLOCKS = """
import time

def f(x):
    print("CLOCKS", time.clock_gettime(time.CLOCK_MONOTONIC), time.clock_gettime(time.CLOCK_BOOTTIME))
    return x
"""


#: Behaves as ``one`` for a whole visit when bit ``bit`` of its first call's first tensor sum
#: (|sum| in millionths) is set, else as ``zero``: in the probe visit that bit is the same for
#: every submission, and the mistake the report names says which way it went.
_BIT_CHANNEL = """
import torch as _torch

_mode = []


def _load(text):
    ns = {{}}
    exec(compile(text, "<part>", "exec"), ns)
    return ns[{name!r}]


_zero = _load({zero!r})
_one = _load({one!r})


def {name}(*args, **kwargs):
    if not _mode:
        first = args[0]
        _mode.append((int(abs(float(first.detach().double().sum())) * 1e6) >> {bit}) & 1)
    return (_one if _mode[0] else _zero)(*args, **kwargs)
"""


def bit_channel(name: str, zero: str, one: str, bit: int) -> str:
    """A submission whose named mistake tells bit ``bit`` of the first probe input's sum."""
    return _BIT_CHANNEL.format(name=name, zero=zero, one=one, bit=bit)


_TIMED = """
import time as _time

_mode = []


def _load(text):
    ns = {{}}
    exec(compile(text, "<part>", "exec"), ns)
    return ns[{name!r}]


_inner = _load({inner!r})


def {name}(*args, **kwargs):
    if not _mode:
        _mode.append((int(abs(float(args[0].detach().double().sum())) * 1e6) >> {bit}) & 1)
        if _mode[0]:
            _time.sleep({nap!r})
    return _inner(*args, **kwargs)
"""


def timed(name: str, inner: str, bit: int, nap: float) -> str:
    """``inner``, after sleeping ``nap`` seconds in a visit whose first input's bit ``bit`` is set:
    the probe visit's duration (``timings["probe_visit"]``, shown under the ``full`` policy)
    tells that bit of the hidden probe input."""
    return _TIMED.format(name=name, inner=inner, bit=bit, nap=nap)
