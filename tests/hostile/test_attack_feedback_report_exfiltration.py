"""Carrying hidden inputs and unreleased exercises out through reports (review 5, issue 31's
acceptance): a white-box red team of the feedback policies, through the
running service (the real app, its in-process worker, the real jail, SQLite). Each test asserts
what should hold; each was ``xfail(strict=True)`` while its attack worked, and the mark went with
the fix (the last three on branch policies-fix2: attacks 4, 8 and 11): they all pass now.
Assertions read what a learner's JSON or HTML holds, never how long anything took."""

from __future__ import annotations

import json
import re

import pytest

from tests.hostile import sources as H
from tests.hostile.test_attack_feedback_policy_leaks import Service, service  # noqa: F401  (the module's own service)

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


def test_attack1_a_frame_named_after_the_inputs_is_shown_under_report(service: Service) -> None:
    done = service.grade("ann", "p-tokens", RENAMED_FRAME)
    digits = _digits_of_first_input(service, done["id"])
    assert digits, "the instructor's view has the code's own print of what it saw"
    mine = json.dumps(service.spend("ann", done["id"]))  # a token: the report view
    leaked = set(re.findall(r"LEAK_([\d_]+)", mine))
    assert not leaked & set(digits), sorted(leaked & set(digits))[:3]


def test_attack2_traceback_source_lines_from_a_poisoned_linecache(service: Service) -> None:
    done = service.grade("bea", "p-tokens", POISONED_LINECACHE)
    digits = _digits_of_first_input(service, done["id"])
    assert digits
    mine = json.dumps(service.spend("bea", done["id"]))
    leaked = set(re.findall(r"LEAK_([\d_]+)", mine))
    assert not leaked & set(digits), sorted(leaked & set(digits))[:3]


# --- attack 3: the line a call raises on, chosen from the inputs -------------------------------

#: A file padded with 3000 comment lines; each call raises from a code object moved (its
#: ``co_firstlineno``) to line 900 + the first input's first value in thousandths: the report's
#: location (line, and the traceback's "line N") says where, so it says the value.
_PAD = "\n".join(f"# pad {i}" for i in range(3000))
LINE_OF_THE_INPUT = H.HONEST_AS_IMPL + '''
import types

def _boom():
    raise ValueError("boom")

def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    target = 900 + int(abs(log_probs_new.flatten()[0].item()) * 1000) % 2000
    print("LINE=%d" % target)
    types.FunctionType(_boom.__code__.replace(co_firstlineno=target - 1), globals())()
''' + _PAD + "\n"


def test_attack3_the_raising_line_carries_an_input_value(service: Service) -> None:
    done = service.grade("dan", "p-tokens", LINE_OF_THE_INPUT)
    targets = set(re.findall(r"LINE=(\d+)", json.dumps(service.as_("prof", done["id"]))))
    assert targets
    mine = service.spend("dan", done["id"])
    lines = {str(c["location"]["line"]) for c in mine["feedback"]["root_causes"] if c["location"]}
    lines |= set(re.findall(r"line (\d+)", " ".join(c["traceback"] for c in mine["feedback"]["root_causes"])))
    assert not lines & targets, sorted(lines & targets)


# --- attack 4: unpublishing an exercise shows its hidden verdicts in full ------------------------


def test_attack4_an_unpublished_hidden_exercise_shows_everything(service: Service) -> None:
    from datetime import timedelta

    from tests.hostile.test_attack_feedback_policy_leaks import NOW

    client, prof = service.client, service.headers["prof"]
    assert client.post("/api/v1/courses", json={"slug": "p-drop", "title": "DROP", "time_zone": "UTC"},
                       headers=prof).status_code == 201
    roster = client.post("/api/v1/courses/p-drop/roster", content=b"name,display_name\ngus,Gus\nhal,Hal\n",
                         headers={**prof, "Content-Type": "text/csv"})
    assert roster.status_code == 200, roster.text
    answer = client.put("/api/v1/courses/p-drop/exercises/actor-loss", headers=prof, json={
        "release_at": (NOW - timedelta(days=1)).isoformat(), "due_at": (NOW + timedelta(days=7)).isoformat(),
        "feedback_policy": "hidden-until-due"})
    assert answer.status_code == 200, answer.text
    done = service.grade("gus", "p-drop", H.HONEST.replace("import torch", "import torch\nprint('STDOUT-OF-GUS')"))
    assert done["feedback_view"] == "hidden" and done["score"] is None
    # the instructor takes it out of the set for a while (to fix a typo, say): "submissions and scores are kept"
    assert client.delete("/api/v1/courses/p-drop/exercises/actor-loss", headers=prof).status_code == 200
    mine = service.as_("gus", done["id"])
    board = client.get("/api/v1/leaderboard?course=p-drop", headers=service.headers["hal"]).json()
    assert mine["feedback_view"] != "full" and mine["score"] is None and not mine["timings"], mine
    assert "STDOUT-OF-GUS" not in json.dumps(mine)
    assert all(e["board_score"] in (None, 0) for e in board["entries"]), board


# --- attack 5: an excuse of a hidden exercise, on the learner's page only -------------------------


def test_attack5_the_learner_page_lists_an_excuse_the_api_holds_back(service: Service) -> None:
    client = service.client
    answer = client.put("/api/v1/courses/p-hidden/scores/eve/actor-loss/excuse", headers=service.headers["prof"],
                        json={"reason": "EXCUSE-REASON-EVE"})
    assert answer.status_code == 200, answer.text
    api = client.get("/api/v1/courses/p-hidden/scores", headers=service.headers["eve"])
    assert "EXCUSE-REASON-EVE" not in api.text  # what the API promises
    html = service.page("eve", "/dashboard/learners/eve?course=p-hidden")
    assert "EXCUSE-REASON-EVE" not in html


# --- attack 6: an unreleased exercise named on the learner's page and in the OpenAPI -------------


def test_attack6_the_upload_placeholder_names_an_unreleased_function(service: Service) -> None:
    assert service.client.get("/api/v1/exercises/gae", headers=service.headers["ann"]).status_code == 404
    html = service.page("ann", "/dashboard/learners/ann?course=later")
    assert "upload-form" in html
    assert "compute_gae" not in html


def test_attack6_the_openapi_names_an_unreleased_exercises_mistake(service: Service) -> None:
    assert service.client.get("/api/v1/exercises/gae", headers=service.headers["ann"]).status_code == 404
    api = service.client.get("/api/v1/openapi.json")  # no token at all
    assert api.status_code == 200
    assert "bootstrap-from-padding" not in api.text and "gae/hyper" not in api.text


# --- attack 7: the case seed in every report message regenerates every hidden input --------------

#: Each call prints its first input's first values (the instructor's view keeps stdout).
PRINTS_ITS_INPUTS = H.HONEST_AS_IMPL + '''
def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    ''' + DIGITS + '''
    print("DIGITS=" + d)
    return _honest(log_probs_new, log_probs_old, advantages, clip_range) * 1.5
'''


def test_attack7_the_seed_in_a_report_rebuilds_the_hidden_inputs(service: Service) -> None:
    from exercises.framework import CaseGen
    from exercises.registry import get_exercise

    done = service.grade("eve", "p-tokens", PRINTS_ITS_INPUTS)
    printed = set(_digits_of_first_input(service, done["id"]))
    assert printed
    mine = json.dumps(service.spend("eve", done["id"]))
    rebuilt: set[str] = set()
    for seed in set(re.findall(r"\bseed (\d+)\]", mine)):  # the learner, at home, with the public judge
        for case in get_exercise("actor-loss").build_cases(CaseGen(int(seed))):
            first = case.args[0] if case.args else None
            if hasattr(first, "flatten"):
                rebuilt.add("_".join(str(int(abs(v) * 1e6)) for v in first.flatten()[:6].tolist()))
    assert not rebuilt & printed, sorted(rebuilt & printed)[:3]


# --- attack 8: how many elements of a gradient differ, chosen from the inputs --------------------

#: The value is right; the gradient is the reference's plus 1 on the first k elements, k taken
#: from the inputs: "k of n elements differ" says k (about log2(n) bits a check, and "first at"
#: and "worst at" give two indices more).
COUNTED_MISMATCH = H.HONEST_AS_IMPL + '''
import torch

def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    loss = _honest(log_probs_new, log_probs_old, advantages, clip_range)
    n = log_probs_new.numel()
    if n < 4:
        return loss
    k = 1 + int(abs(log_probs_old.flatten()[0].item()) * 1000) % (n - 1)
    print("K=%d/%d" % (k, n))
    mask = torch.zeros(n, dtype=log_probs_new.dtype, device=log_probs_new.device)
    mask[:k] = 1.0
    extra = (log_probs_new.flatten() * mask).sum()
    return loss + extra - extra.detach()
'''


def test_attack8_the_mismatch_count_carries_an_input_value(service: Service) -> None:
    done = service.grade("fay", "p-tokens", COUNTED_MISMATCH)
    sent = set(re.findall(r"K=(\d+/\d+)", json.dumps(service.as_("prof", done["id"]))))
    assert sent
    mine = service.spend("fay", done["id"])
    said = {f"{k}/{n}" for c in mine["checks"] for k, n in re.findall(r"(\d+) of (\d+) elements differ", c["message"])}
    assert not said & sent, sorted(said & sent)


# --- attack 9: the scores API names an exercise not released yet ---------------------------------


def test_attack9_the_scores_route_names_an_unreleased_exercise(service: Service) -> None:
    client, gus = service.client, service.headers["gus"]
    assert client.get("/api/v1/courses/later/exercises", headers=gus).json()["exercises"] == []
    answer = client.get("/api/v1/courses/later/scores", headers=gus)
    assert answer.status_code == 200, answer.text
    assert "gae" not in {s["exercise"] for s in answer.json()["scores"]}


# --- attack 10: a SyntaxError raised at call time carries its own "source line" -------------------

#: ``traceback.format_exception_only`` writes a SyntaxError's ``filename``/``lineno``/``text`` as
#: indented lines before the message: the report's traceback cut keeps indented lines, so the
#: learner's ``text`` (the inputs) survives, whatever the frames are.
RAISES_A_SYNTAX_ERROR = H.HONEST_AS_IMPL + '''
def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    ''' + DIGITS + '''
    print("DIGITS=" + d)
    raise SyntaxError("x", ("submission.py", 3, 1, "LEAK_" + d + "\\n"))
'''


def test_attack10_a_call_time_syntax_errors_text_is_shown(service: Service) -> None:
    done = service.grade("gus", "p-tokens", RAISES_A_SYNTAX_ERROR)
    digits = set(_digits_of_first_input(service, done["id"]))
    assert digits
    mine = json.dumps(service.spend("gus", done["id"]))
    assert not set(re.findall(r"LEAK_([\d_]+)", mine)) & digits


# --- found in passing (not a leak): hidden-until-due in one course hides the score in another ------


def test_bug_a_full_courses_score_is_held_back_by_another_courses_policy(service: Service) -> None:
    done = service.grade("hal", "p-full", H.HONEST)
    assert done["feedback_view"] == "full" and done["score"] == 100
    scores = service.client.get("/api/v1/courses/p-full/scores", headers=service.headers["hal"]).json()["scores"]
    mine = next(s for s in scores if s["exercise"] == "actor-loss")
    assert mine["described"] != "hidden until due" and mine["counted_score"] == 100, mine


# --- attack 11: the exit code of a process the learner's code ends ---------------------------------

#: The first call ends the process with an exit code taken from the inputs (100-199): the
#: crash message quotes the code ("exit code N"), so a report carries about 7 bits of input.
EXIT_CODE_OF_THE_INPUT = H.HONEST_AS_IMPL + '''
import os
import sys

def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    code = 100 + int(abs(log_probs_new.flatten()[0].item()) * 1000) % 100
    print("EXIT=%d" % code, flush=True)
    sys.stderr.flush()
    os._exit(code)
'''


def test_attack11_the_exit_code_carries_an_input_value(service: Service) -> None:
    done = service.grade("hal", "p-tokens", EXIT_CODE_OF_THE_INPUT)
    assert done["verdict"] == "crashed", done["verdict"]
    full = service.as_("prof", done["id"])
    sent = set(re.findall(r"EXIT=(\d+)", full["stdout"]))  # what the code printed it would exit with
    assert sent, full["stdout"][:300]
    mine = service.spend("hal", done["id"])
    said = set(re.findall(r"exit code (\d+)", json.dumps(mine)))
    assert not said & sent, sorted(said & sent)
