"""A flood of forged call records in the result file.

Review 4 (fixed: sandbox.verdicts refuses records of calls the request never made before reading
any, and caps the output-tree nodes of all calls together): the jail's result file could hold any number of call records (only its 4 MiB size is
capped), and the trusted side validates and converts every one of them, in each visit (regular
and measured). Learner code that patches the harness's captured ``_JSON_DUMPS`` (reached through
its frame's globals) appends 150,000 tiny records: the judge then spends ~15 s of its own CPU on
one submission that honestly takes ~1 s, outside every jail limit."""

from __future__ import annotations

import time

from exercises.registry import get_exercise
from tests.hostile import sources as S
from tests.hostile.conftest import Jail

FLOOD = S.HONEST_AS_IMPL + '''
import sys
_hooked = [False]
def _hook():
    if _hooked[0]:
        return
    f = sys._getframe(2)
    while f is not None and "_JSON_DUMPS" not in f.f_globals:
        f = f.f_back
    g = f.f_globals
    orig = g["_JSON_DUMPS"]
    def dumps(obj, *a, **k):
        obj.setdefault("calls", []).extend({"id": "x%d" % i} for i in range(150000))
        return orig(obj, *a, **k)
    g["_JSON_DUMPS"] = dumps
    _hooked[0] = True

def compute_actor_loss(*args, **kwargs):
    _hook()
    return _honest(*args, **kwargs)
'''


def test_a_flood_of_call_records_is_refused_cheaply(jail: Jail) -> None:
    t0 = time.monotonic()  # the baseline: an honest file, in this test, under this load
    honest = jail.judge.grade("actor-loss", get_exercise("actor-loss").reference_source, 7)  # type: ignore[attr-defined]
    honest_seconds = time.monotonic() - t0
    assert honest.score == 100, honest.message
    t0 = time.monotonic()
    report = jail.judge.grade("actor-loss", FLOOD, 7)  # type: ignore[attr-defined]
    took = time.monotonic() - t0
    assert took < 2 * honest_seconds + 4, f"the judge spent {took:.1f} s on forged call records (honest: {honest_seconds:.1f} s)"
    assert report.verdict == "crashed", "results naming calls the request never made were believed"
