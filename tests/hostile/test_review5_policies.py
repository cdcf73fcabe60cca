"""Review 5 (issue 31's acceptance): a white-box red team of the feedback policies, through the
running service (the real app, its in-process worker, the real jail, SQLite). Each test here is
an attack that WORKS today: it is marked ``xfail(strict=True)`` so that it turns into a failure
(an unexpected pass) the day the leak is closed, and the mark is then taken off. Assertions read
what a learner's JSON or HTML holds, never how long anything took."""

from __future__ import annotations

import json
import re

import pytest

from tests.hostile import sources as H
from tests.hostile.test_review4_policies import Service, service  # noqa: F401  (the module's own service)

pytestmark = pytest.mark.slow

#: The first hidden input's first values, as digits (what every attack below carries out).
DIGITS = 'd = "_".join(str(int(abs(v) * 1e6)) for v in log_probs_new.flatten()[:6].tolist())'


def _digits_of_first_input(service: Service, sid: int) -> list[str]:
    """What the instructor's full view says the learner's code saw (its own print of the digits)."""
    seen = json.dumps(service.as_("prof", sid))
    return re.findall(r"DIGITS=([\d_]+)", seen)


# --- attack 1: a frame's function name, made at run time from the inputs ------------------------

#: Each call raises from a function whose code object is renamed after the first input's values:
#: the report keeps a traceback's frames ("in NAME") and the location's ``function``.
RENAMED_FRAME = H.HONEST_AS_IMPL + '''
import types

def _boom():
    raise ValueError("boom")

def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    ''' + DIGITS + '''
    print("DIGITS=" + d)
    code = _boom.__code__.replace(co_name="LEAK_" + d, co_qualname="LEAK_" + d)
    types.FunctionType(code, globals())()
'''

# --- attack 2: the source lines a traceback prints, from a linecache the module fills -----------

#: The harness formats the learner's frames with ``traceback.format_list``, which reads the
#: source lines from ``linecache``: the module puts the inputs there before raising.
POISONED_LINECACHE = H.HONEST_AS_IMPL + '''
import linecache

def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    ''' + DIGITS + '''
    print("DIGITS=" + d)
    name = compute_actor_loss.__code__.co_filename
    linecache.cache[name] = (1, None, ["LEAK_" + d + "\\n"] * 400, name)
    raise ValueError("boom")
'''


@pytest.mark.xfail(strict=True, reason="red team: a renamed code object's name reaches the report view "
                   "(traceback frames and location.function keep it)")
def test_attack1_a_frame_named_after_the_inputs_is_shown_under_report(service: Service) -> None:
    done = service.grade("ann", "p-tokens", RENAMED_FRAME)
    digits = _digits_of_first_input(service, done["id"])
    assert digits, "the instructor's view has the code's own print of what it saw"
    mine = json.dumps(service.spend("ann", done["id"]))  # a token: the report view
    leaked = set(re.findall(r"LEAK_([\d_]+)", mine))
    assert not leaked & set(digits), sorted(leaked & set(digits))[:3]


@pytest.mark.xfail(strict=True, reason="red team: traceback source lines come from the jail's linecache, "
                   "which the learner's module fills with the inputs")
def test_attack2_traceback_source_lines_from_a_poisoned_linecache(service: Service) -> None:
    done = service.grade("bea", "p-tokens", POISONED_LINECACHE)
    digits = _digits_of_first_input(service, done["id"])
    assert digits
    mine = json.dumps(service.spend("bea", done["id"]))
    leaked = set(re.findall(r"LEAK_([\d_]+)", mine))
    assert not leaked & set(digits), sorted(leaked & set(digits))[:3]
