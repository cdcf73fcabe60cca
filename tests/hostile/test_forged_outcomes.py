"""Review 7: outcomes forged by code that ran, through the running service (the real app, its
in-process worker, the real jail, SQLite).

From inside a call the harness's frames name its result file (review 6, attack 4), so code that
has read the judge's inputs can write any result and exit. The trusted side compiles the source
it sent before it believes a ``syntax_error``. A ``runtime_error`` ("raised while being
imported") is one of the outcomes shown under every policy (``feedback_policy.UNCHECKED_VERDICTS``),
with its type (one of Python's own, ``quoted_type``) and its line (a code line of the stored
source, ``cut_location``): the documented bound holds for an import, which runs before the
inputs exist, and review 7 wrote one after a call had read them. Fixed: the jail gets the calls
and inputs only when the imported module asks, and the runner believes an import-phase outcome
only of a job it sent none to (``sandbox.verdicts.interpret``, ``inputs_given``): the forgery is
a malformed result, a crash.

Each test asserts what a safe service does; ``xfail(strict=True)`` marks an attack that works.

Attempts that failed (the service held; "read" = ruled out from the code, not sent):

- a ``missing_function`` result naming functions after the inputs: the names are never shown
  (``MISSING_NOTE``, or the near miss read from the stored source)
- a ``runtime_error`` result at the 4 MiB cap (100,000 frames): about an honest run's CPU here
- a file that compiles in the jail and not on the trusted side (the compiler's depth budget
  shrinks with the caller's stack): the syntax error is then the trusted compile's own words
  and line, about 1 bit (read; 60 KB nestings of 11 kinds all refused alike, in a thread)
- a crash of the trusted side through ``outputs.safetensors``: the header is checked before the
  library reads it (read)
- ``JOB_END_GRACE_SECONDS`` (an ``internal_error`` does not use an attempt): no process of the
  job outlives its pid-1 init (read)
"""

from __future__ import annotations

import builtins
import json
import re

import pytest

from server.courses.feedback_cut import quoted_type
from tests.hostile import sources as H
from tests.hostile.test_attack_feedback_policy_leaks import Service, service  # noqa: F401  (the module's own service)

pytestmark = pytest.mark.slow

#: 3,000 one-line functions: every line of the padding is a code line of the stored source.
_PAD = "\n".join(f"def f_{i:04d}(): pass" for i in range(3000))
_FIRST_PAD_LINE = 40  # the padding starts below this line (the code above is shorter)

#: Python's own exception types, as the report view shows them (about 6 bits).
_TYPES = sorted(n for n in dir(builtins) if quoted_type(n) == n)

#: A call reads the first hidden input, prints what it read (for the instructor's view), then
#: writes a ``runtime_error`` result naming a line and a type chosen from that value, and exits
#: with the harness's own import-error code.
FORGED_IMPORT_ERROR = H.HONEST_AS_IMPL + '''
import sys as _sys, os as _os, json as _json
_TYPES = %r

def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    v = int(abs(log_probs_new.flatten()[0].item()) * 1e6)
    line = %d + v %% 2900
    kind = _TYPES[(v // 2900) %% len(_TYPES)]
    print("FORGED=%%d:%%s" %% (line, kind))
    f = _sys._getframe(1)
    while f is not None and "result_path" not in f.f_locals:
        f = f.f_back
    if f is not None:
        tb = 'Traceback (most recent call last):\\n  File "submission.py", line %%d, in <module>\\n' %% line
        error = {"type": kind, "classes": [kind], "message": "m", "traceback": tb, "phase": "import"}
        with open(f.f_locals["result_path"], "w") as fh:
            fh.write(_json.dumps({"status": "runtime_error", "error": error}))
        _sys.stdout.flush()
        _os._exit(11)
    return _honest(log_probs_new, log_probs_old, advantages, clip_range)
''' % (_TYPES, _FIRST_PAD_LINE + 20) + _PAD + "\n"


def _forged(service: Service, sid: int) -> tuple[int, str]:
    """The line and type the code chose, from its own print in the instructor's full view."""
    found = re.findall(r"FORGED=(\d+):(\w+)", json.dumps(service.as_("prof", sid)))
    assert found, "the code ran a call and reached the result file"
    return int(found[0][0]), found[0][1]


def _lines(view: dict) -> set[int]:
    causes = (view.get("feedback") or {}).get("root_causes") or []
    return {c["location"]["line"] for c in causes if c.get("location")}


@pytest.mark.parametrize("course", ["p-hidden", "p-score"])
def test_a_forged_import_error_carries_a_line_chosen_from_the_inputs(service: Service, course: str) -> None:
    done = service.grade("fay", course, FORGED_IMPORT_ERROR)
    line, kind = _forged(service, done["id"])
    mine = service.as_("fay", done["id"])
    assert mine["feedback_view"] in ("hidden", "score")
    # secure: an import error is believed only of a module that never reached a call (the
    # result is malformed otherwise), so nothing chosen on the inputs is shown
    assert line not in _lines(mine), (mine["verdict"], mine["message"], _lines(mine))
    assert kind not in json.dumps(mine) or kind in ("Exception",), mine["message"]


def test_sanity_an_honest_file_under_hidden_shows_nothing(service: Service) -> None:
    done = service.grade("gus", "p-hidden", H.HONEST)
    assert done["feedback_view"] == "hidden" and done["verdict"] is None and not done["checks"]


#: The same route to a ``missing_function`` result naming functions after the inputs.
FORGED_MISSING = H.HONEST_AS_IMPL + '''
import sys as _sys, os as _os, json as _json

def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    names = ["LEAK_%d" % int(abs(v) * 1e6) for v in log_probs_new.flatten()[:20].tolist()]
    print("NAMES=" + ",".join(names))
    f = _sys._getframe(1)
    while f is not None and "result_path" not in f.f_locals:
        f = f.f_back
    if f is not None:
        with open(f.f_locals["result_path"], "w") as fh:
            fh.write(_json.dumps({"status": "missing_function", "defined": names, "found_type": names[0]}))
        _sys.stdout.flush()
        _os._exit(12)
    return _honest(log_probs_new, log_probs_old, advantages, clip_range)
'''


@pytest.mark.parametrize("course", ["p-hidden", "p-tokens"])
def test_a_forged_missing_function_names_nothing_it_read(service: Service, course: str) -> None:
    """Failed attempt: the names a missing function's module defined are never shown under a
    policy that hides the run (``feedback_cut.MISSING_NOTE``), whoever wrote them."""
    done = service.grade("hal", course, FORGED_MISSING)
    names = set(re.findall(r"LEAK_\d+", json.dumps(service.as_("prof", done["id"]))))
    assert names, "the code ran a call and reached the result file"
    mine = service.as_("hal", done["id"]) if course == "p-hidden" else service.spend("hal", done["id"])
    assert not names & set(re.findall(r"LEAK_\d+", json.dumps(mine))), mine["message"]


#: Results as large as the trusted side reads (4 MiB of ``result.json``): an import error whose
#: traceback is 100,000 frames of the learner's file, and one whose message is 4 MiB.
FORGED_HUGE = H.HONEST_AS_IMPL + '''
import sys as _sys, os as _os, json as _json

def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    f = _sys._getframe(1)
    while f is not None and "result_path" not in f.f_locals:
        f = f.f_back
    if f is not None:
        frame = '  File "submission.py", line 3, in <module>\\n    x\\n    ^\\n'
        tb = "Traceback (most recent call last):\\n" + frame * (({size} >> 20) * 20000)
        error = {{"type": "ValueError", "classes": ["ValueError"] * 16, "message": "m" * 1000, "traceback": tb,
                 "phase": "import"}}
        with open(f.f_locals["result_path"], "w") as fh:
            fh.write(_json.dumps({{"status": "runtime_error", "error": error}}))
        _os._exit(11)
    return _honest(log_probs_new, log_probs_old, advantages, clip_range)
'''


def test_a_forged_result_at_the_size_cap_costs_the_server_about_an_honest_run(service: Service) -> None:
    """Failed attempt (denial of service): the trusted side's work on a result at its cap, in
    CPU seconds of this process (the app and its worker thread; the jail is other processes),
    against an honest submission's in the same run, with wide slack."""
    import resource
    import time

    def cost(source: str) -> tuple[float, str]:
        before = time.process_time()
        done = service.grade("eve", "p-full", source)
        return time.process_time() - before, done["verdict"]

    baseline, verdict = cost(H.HONEST)
    assert verdict == "graded"
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    spent, verdict = cost(FORGED_HUGE.format(size=3 << 20))
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) << 10
    print(f"honest {baseline:.2f} s CPU, forged 3 MiB result {spent:.2f} s CPU ({verdict}), peak RSS +{grown >> 20} MiB")
    assert spent < 10 * baseline + 2.0, (baseline, spent)
    assert grown < 400 << 20, grown


#: The same forgery from the import itself: the module stops its process (how the harness asks
#: for the calls and inputs), reads them from stdin, and writes an import error chosen from them.
FORGED_AT_IMPORT = '''
import json as _json, os as _os, signal as _signal, sys as _sys
_os.kill(_os.getpid(), _signal.SIGSTOP)
_head = _os.read(0, 8)
_kind = %r[_head[3] %% %d]
print("FORGED=1:" + _kind)
_error = {"type": _kind, "classes": [_kind], "message": "m", "traceback": "", "phase": "import"}
with open("../result.json", "w") as _fh:
    _fh.write(_json.dumps({"status": "runtime_error", "error": _error}))
_sys.stdout.flush()
_os._exit(11)
''' % (_TYPES, len(_TYPES))


def test_an_import_error_written_after_the_module_asked_for_its_inputs_is_a_crash(service: Service) -> None:
    done = service.grade("gus", "p-hidden", FORGED_AT_IMPORT)
    _, kind = _forged(service, done["id"])
    assert service.as_("prof", done["id"])["verdict"] == "crashed"
    mine = service.as_("gus", done["id"])
    assert kind not in json.dumps(mine) or kind in ("Exception",), mine["message"]
