"""Forged harness records and chosen names quoted in reports (review 6): a white-box red team
of the feedback policies, the upload form and the queue,
through the running service (the real app, its in-process worker, the real jail, SQLite).

Each test asserts what a safe service does; a test marked ``xfail(strict=True)`` is an attack
that still works (it fails while the attack succeeds). Assertions read what a learner's JSON
holds, never how long anything took.

Attempts that failed (the service held; "read" = ruled out from the code, not sent):

- a notebook whose cell ``source`` nests lists 900-1000 deep (JSON accepts it, ``str()`` of it runs deeper): 400, no RecursionError
- the same exercise through the default course (``full``) to see the inputs a tokens course hides: a learner enrolled in a course is not in the default course, and case seeds are per submission (read)
- another learner's submission, the stats, gradebooks, exercise and mistake pages as a learner: 404/403, instructors only (read)
- ``/dashboard/live`` as a learner: the change mark counts the learner's own rows only (read)
- spending a learner's token from another site: the form wants the same Origin and the form token (read)
- a returned ``str``, dict keys or an object's class name quoted in a check: ``cut_reprs`` takes them (read)
- the memory check quoting the measured run's exception message: cut after "raised T: " (read)
- a third slow upload of one learner, 16 in all: 429 before the body (covered by review 5; not re-sent)
"""

from __future__ import annotations

import json
import re

import pytest

from sandbox.verdicts import MALFORMED
from server.courses.feedback_cut import REPORT_ROOT_CAUSES
from server.courses.source_facts import SourceFacts
from tests.hostile import sources as H
from tests.hostile.test_attack_feedback_policy_leaks import Service, service  # noqa: F401  (the module's own service)

pytestmark = pytest.mark.slow

#: The first hidden input's first values, as digits (what every attack below carries out).
DIGITS = 'd = "_".join(str(int(abs(v) * 1e6)) for v in log_probs_new.flatten()[:6].tolist())'


def _printed(service: Service, sid: int, tag: str) -> set[str]:
    """What the instructor's full view says the learner's code printed after ``tag=``."""
    return set(re.findall(tag + r"=([\d_]+)", json.dumps(service.as_("prof", sid))))


# --- sanity: the harness grades, and the report view keeps the judge's own words ---------------


def test_sanity_an_honest_file_scores_100_and_a_token_shows_its_report(service: Service) -> None:
    done = service.grade("ann", "p-tokens", H.HONEST)
    assert done["verdict"] == "graded" and done["score"] == 100 and done["feedback_view"] == "score"
    mine = service.spend("ann", done["id"])
    assert mine["feedback_view"] == "report" and mine["token_spent"]


# --- attack 1: a forged device string, quoted by the dtype/device check ------------------------

#: From inside a call, the harness's globals are reached through the caller's frame (documented:
#: not a seal). The per-call function is wrapped so that each record's output says it lives on a
#: device named after the call's inputs; the dtype/device check quotes the device it was told
#: ("got LEAK_... on input"), and no cut of the report view removes a bare word after "got".
FORGED_DEVICE = H.HONEST_AS_IMPL + '''
import sys as _sys
_SEEN = []

def _install():
    g = _sys._getframe(2).f_globals
    real = g.get("_run_call")
    if real is None or getattr(real, "forged", False):
        return
    def fake(*args, **kwargs):
        record = real(*args, **kwargs)
        out = record.get("output")
        if isinstance(out, dict) and out.get("type") == "tensor" and _SEEN:
            out["device"] = "LEAK_" + _SEEN[-1]
        return record
    fake.forged = True
    g["_run_call"] = fake

def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    _install()
    ''' + DIGITS + '''
    print("DIGITS=" + d)
    _SEEN.append(d)
    return _honest(log_probs_new, log_probs_old, advantages, clip_range)
'''


def test_attack1_a_forged_device_name_carries_the_inputs_into_the_report(service: Service) -> None:
    """Fixed: a record's device, dtype and layout are held to closed lists (``sandbox.verdicts``);
    any other word is a malformed result, ``crashed``."""
    done = service.grade("bea", "p-tokens", FORGED_DEVICE)
    digits = _printed(service, done["id"], "DIGITS")
    assert digits, "the instructor's view has the code's own print of what it saw"
    mine = service.spend("bea", done["id"])
    assert mine["verdict"] == "crashed" and mine["message"] == MALFORMED, mine["message"]
    leaked = set(re.findall(r"LEAK_([\d_]+)", json.dumps(mine)))
    assert not leaked & digits, sorted(leaked & digits)[:3]


#: The same flaw through the tensor's ``layout``: the output node loses its tensor's name (so the
#: judge has no tensor for it) and says its layout is named after the inputs; every value check
#: then says "Expected the loss to be a torch.Tensor, got a LEAK_... tensor".
FORGED_LAYOUT = FORGED_DEVICE.replace(
    'out["device"] = "LEAK_" + _SEEN[-1]', 'out.pop("name", None); out["layout"] = "LEAK_" + _SEEN[-1]'
)


def test_attack1b_a_forged_layout_name_carries_the_inputs_into_the_report(service: Service) -> None:
    done = service.grade("dan", "p-tokens", FORGED_LAYOUT)
    digits = _printed(service, done["id"], "DIGITS")
    assert digits
    mine = service.spend("dan", done["id"])
    assert mine["verdict"] == "crashed" and mine["message"] == MALFORMED, mine["message"]
    leaked = set(re.findall(r"LEAK_([\d_]+)", json.dumps(mine)))
    assert not leaked & digits, sorted(leaked & digits)[:3]


# --- attacks 2 and 3: attack 3 and 1 of review 5 again, with code for padding --------------------

#: Review 5's fix keeps a frame's line only when it is a code line of the stored source, and its
#: function only when the source defines that name. Padding the file with 3,000 one-line
#: functions makes every line a code line and 3,000 names defined: each call raises through 8
#: frames of code objects moved to a line and renamed after the first input's value (about 11
#: bits a frame), with one of 7 messages (so that checks failing on different calls give
#: different root causes).
#:
#: Where honest code raises depends on the inputs too, so the report cannot show no line at all.
#: The fix bounds it: at most ``REPORT_ROOT_CAUSES`` causes, one line each (the innermost frame
#: of the learner's file), the function and columns read from the stored source at that line.
_PAD = "\n".join(f"def f_{i:04d}(): pass" for i in range(3000))
LINE_AND_NAME = H.HONEST_AS_IMPL + '''
import types

def _hop(depth, v):
    if depth == 0:
        raise ValueError("boom %d" % (v % 7))
    _HOPS[depth - 1](depth - 1, v)

_HOPS = []

def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    v = int(abs(log_probs_new.flatten()[0].item()) * 1e6)
    del _HOPS[:]
    for depth in range(8):
        target = 60 + (v // 3 ** depth) % 2900
        name = "f_%04d" % ((v // 7 ** depth) % 3000)
        print("LINE=%d NAME=%s" % (target, name))
        code = _hop.__code__.replace(co_firstlineno=target - 2, co_name=name, co_qualname=name)
        _HOPS.append(types.FunctionType(code, globals()))
    _HOPS[7](7, v)
''' + _PAD + "\n"

_graded: dict[str, dict[str, object]] = {}


def _line_and_name(service: Service) -> tuple[dict[str, object], dict[str, object]]:
    """The padded submission graded once (full view, report view after a token)."""
    if not _graded:
        done = service.grade("cal", "p-tokens", LINE_AND_NAME)
        _graded["full"] = service.as_("prof", done["id"])
        _graded["report"] = service.spend("cal", done["id"])
    return _graded["full"], _graded["report"]


def _causes(report: dict[str, object]) -> list[dict[str, object]]:
    return report["feedback"]["root_causes"]  # type: ignore[index,return-value]


def _lines_of(cause: dict[str, object]) -> set[int]:
    """Every line number one root cause names (its location, its traceback)."""
    location = cause["location"]
    lines = {int(location["line"])} if location else set()  # type: ignore[index]
    return lines | {int(n) for n in re.findall(r"line (\d+)", str(cause["traceback"]))}


def test_attack2_a_report_names_a_bounded_number_of_lines_the_code_chose(service: Service) -> None:
    full, mine = _line_and_name(service)
    targets = {int(n) for n in re.findall(r"LINE=(\d+)", json.dumps(full))}
    assert len(targets) > REPORT_ROOT_CAUSES, "the code chose more lines than a report may show"
    # the instructors' view is unchanged: every stored cause with every frame
    assert len(set().union(*(_lines_of(c) for c in _causes(full)))) > REPORT_ROOT_CAUSES
    causes = _causes(mine)
    assert 1 <= len(causes) <= REPORT_ROOT_CAUSES
    assert all(len(_lines_of(c)) <= 1 for c in causes), [c["traceback"] for c in causes]
    shown = {int(n) for n in re.findall(r"line (\d+)", json.dumps(mine))} | set().union(*map(_lines_of, causes))
    # the bound: at most one line a cause, so log2(code lines) bits a cause (docs/security.md)
    assert len(shown) <= REPORT_ROOT_CAUSES, sorted(shown)


def test_attack3_a_frames_name_adds_nothing_to_its_line(service: Service) -> None:
    full, mine = _line_and_name(service)
    names = set(re.findall(r"NAME=(f_\d{4})", json.dumps(full)))
    assert len(names) > REPORT_ROOT_CAUSES
    facts = SourceFacts(LINE_AND_NAME, None)
    for cause in _causes(mine):
        location = cause["location"]
        if location:  # the source's function at the line, whatever the frame was called
            assert location["function"] == facts.function_at(location["line"]), location  # type: ignore[index]
    shown = set(re.findall(r"f_\d{4}", json.dumps(_causes(mine))))
    assert len(shown) <= REPORT_ROOT_CAUSES, sorted(shown)


# --- attack 4 (found while fixing 1): a syntax error written by code that ran -------------------

#: From inside a call, the harness's frames name its result file: the code writes a
#: ``syntax_error`` result there and exits. The verdict's message quoted its "message" and
#: "text" whole (no cut touches a syntax error: it is about the file alone), so the inputs went
#: out under every policy. Fixed: the trusted side compiles the source it sent; a syntax error
#: of a file that compiles is a malformed result, and a true one is told from that compile.
FORGED_SYNTAX_ERROR = H.HONEST_AS_IMPL + '''
import sys as _sys, os as _os, json as _json

def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    ''' + DIGITS + '''
    print("DIGITS=" + d)
    f = _sys._getframe(1)
    while f is not None and "result_path" not in f.f_locals:
        f = f.f_back
    if f is not None:
        with open(f.f_locals["result_path"], "w") as fh:
            fh.write(_json.dumps({"status": "syntax_error", "line": 3, "message": "LEAK_" + d, "text": "LEAK_" + d}))
        _sys.stdout.flush()
        _os._exit(10)
    return _honest(log_probs_new, log_probs_old, advantages, clip_range)
'''


def test_attack4_a_syntax_error_written_by_the_code_quotes_its_text(service: Service) -> None:
    done = service.grade("eve", "p-tokens", FORGED_SYNTAX_ERROR)
    digits = _printed(service, done["id"], "DIGITS")
    assert digits, "the code ran and reached the result file"
    mine = service.spend("eve", done["id"])
    assert mine["verdict"] == "crashed" and mine["message"] == MALFORMED, mine["message"]
    leaked = set(re.findall(r"LEAK_([\d_]+)", json.dumps(mine)))
    assert not leaked & digits, sorted(leaked & digits)[:3]
