"""A feedback policy never hides that the code did not run (issue 34, item 1): a syntax error, an
import error, a missing function, a time limit or a crash is shown under every policy, with its
line and caret, on every route that returns the submission; a graded verdict stays held back;
a score-only view shows a check whose points are "not counted yet" as such."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from exercises import feedback
from exercises.report import WITHHELD, CheckOutcome, GradeReport
from sandbox.protocol import CallError
from server.app import create_app
from server.config import Settings
from server.courses.feedback_cut import CUT_NOTE
from server.courses.feedback_policy import HIDDEN_NOTE, UNCHECKED_VERDICTS, View, shows_outcome
from server.db import transaction
from server.models import Role, Verdict
from server.users.service import create_user
from tests.server.conftest import Api
from tests.server.courses.conftest import DUE, HOUR, RELEASE, FakeClock, Term
from tests.server.fakes import FakeGrader
from tests.server.live_server import live_server

COURSE = "rlhf-a"
#: A file that does not parse: line 2, the caret under the colon-less ``def``.
BROKEN = "import torch\ndef compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2)\n    return 0\n"
#: A file whose import raises before any call: line 2.
RAISES = "import torch\nraise RuntimeError(str(4711 * 4711))\n"
#: What it raised with: its code's output, which no view but ``full`` shows.
SECRET = str(4711 * 4711)


def _report(verdict: str, source: str, message: str, line: int | None = None, raised: Any = None) -> GradeReport:
    """The judge's report of a visit that ended before any check, feedback built as the judge
    builds it (``raised``: the import-time error, as the jail's result carries it)."""
    report = GradeReport(verdict=verdict, score=0.0, message=message, line=line)
    feedback.attach(report, source, None, "compute_actor_loss", import_error=raised)
    return report


SYNTAX = _report("syntax_error", BROKEN, "Syntax error on line 2: expected ':'", line=2)
TRACEBACK = (
    'Traceback (most recent call last):\n  File "submission.py", line 2, in <module>\n'
    f"    raise RuntimeError(str(4711 * 4711))\nRuntimeError: {SECRET}"
)
IMPORT = _report(
    "runtime_error",
    RAISES,
    f"Your module raised RuntimeError while being imported: {SECRET}\n{TRACEBACK}",
    raised=CallError(type="RuntimeError", classes=["RuntimeError"], message=SECRET, traceback=TRACEBACK, phase="import"),
)
TIMED_OUT = _report("time_limit", BROKEN, "Your code ran longer than the 30 s wall-clock limit and was stopped.")


class SwitchGrader(FakeGrader):
    """Grades each submission with the report the test set last."""


@pytest.fixture
def grader() -> SwitchGrader:
    return SwitchGrader(SYNTAX)


def _submit(term: Term, source: str) -> dict[str, Any]:
    term.clock.now = RELEASE + HOUR
    body = {"exercise": "actor-loss", "source": source, "course": COURSE, "filename": "mine.py"}
    answer = term.client.post("/api/v1/submissions", json=body, headers=term.tokens["ann"])
    assert answer.status_code == 202, answer.text
    return term.api.wait_done(term.tokens["ann"], answer.json()["id"])


def _seen(term: Term, submission_id: int) -> list[dict[str, Any]]:
    headers = term.tokens["ann"]
    listed = term.client.get("/api/v1/submissions", headers=headers).json()
    return [
        term.client.get(f"/api/v1/submissions/{submission_id}", headers=headers).json(),
        term.client.get(f"/api/v1/submissions/{submission_id}?wait=1", headers=headers).json(),
        next(s for s in listed if s["id"] == submission_id),
    ]


def test_the_outcomes_shown_are_the_visits_that_reached_no_check() -> None:
    assert set(Verdict) - {Verdict.GRADED, Verdict.INTERNAL_ERROR} == UNCHECKED_VERDICTS
    assert not shows_outcome(View.HIDDEN, "graded") and not shows_outcome(View.REPORT, "syntax_error")
    assert shows_outcome(View.SCORE, "crashed") and shows_outcome(View.HIDDEN, "time_limit")


@pytest.mark.parametrize("policy", ["hidden-until-due", "score", "tokens:2"])
def test_a_syntax_error_is_shown_with_its_line_and_caret_under_every_policy(
    term: Term, grader: SwitchGrader, policy: str
) -> None:
    term.course(COURSE)
    term.enroll(COURSE, "ann")
    assert term.publish(COURSE, release_at=RELEASE, due_at=DUE, feedback_policy=policy).status_code == 200
    done = _submit(term, BROKEN)
    for record in _seen(term, done["id"]):
        assert record["verdict"] == "syntax_error" and record["score"] == 0, record
        assert record["message"].startswith("Syntax error on line 2") and "released on" not in record["message"]
    detail = _seen(term, done["id"])[0]
    assert detail["feedback_view"] == {"hidden-until-due": "hidden", "score": "score", "tokens:2": "score"}[policy]
    [cause] = detail["feedback"]["root_causes"]
    assert cause["phase"] == "syntax" and cause["location"]["line"] == 2 and cause["location"]["file"] == "mine.py"
    assert cause["location"]["column"] >= 1 and cause["location"]["source"].startswith("def compute_actor_loss")
    assert detail["checks"] == [] and detail["stdout"] == "" and detail["timings"] == {}

    grader.report = IMPORT  # the import error: its type and its line, never what it said
    raised = _seen(term, _submit(term, RAISES)["id"])[0]
    [cause] = raised["feedback"]["root_causes"]
    assert raised["verdict"] == "runtime_error" and "RuntimeError" in raised["message"]
    assert SECRET not in str(raised) and cause["message"] == CUT_NOTE
    # its place is shown from the learner's own file (the stored source), never from the run
    assert cause["location"]["line"] == 2 and cause["location"]["source"] == RAISES.splitlines()[1]

    grader.report = TIMED_OUT
    timed = _seen(term, _submit(term, BROKEN)["id"])[0]
    assert timed["verdict"] == "time_limit" and "wall-clock limit" in timed["message"]


def test_a_graded_verdict_stays_held_back_until_the_due_date(term: Term, grader: SwitchGrader) -> None:
    term.course(COURSE)
    term.enroll(COURSE, "ann")
    term.publish(COURSE, release_at=RELEASE, due_at=DUE, feedback_policy="hidden-until-due")
    grader.report = GradeReport(verdict="graded", score=40.0, message="1 of 2 checks passed.",
                                checks=[CheckOutcome("value", 40, True, "ok"), CheckOutcome("grad", 60, False, "x")])
    for record in _seen(term, _submit(term, BROKEN)["id"]):
        assert record["verdict"] is None and record["score"] is None and record["feedback_view"] == "hidden"
        assert record["message"].startswith(HIDDEN_NOTE.split("{", 1)[0])


def test_a_score_only_view_shows_a_check_not_counted_yet_as_such(term: Term, grader: SwitchGrader) -> None:
    term.course(COURSE)
    term.enroll(COURSE, "ann")
    term.publish(COURSE, release_at=RELEASE, due_at=DUE, feedback_policy="score")
    held = f"{WITHHELD} this contract detail earns its points only once the values on ordinary inputs are right (failed: value)."
    grader.report = GradeReport(verdict="graded", score=0.0, message="0 of 2 checks passed.", checks=[
        CheckOutcome("value", 80, False, "Wrong loss on input x: expected 1, got 2."),
        CheckOutcome("dtype", 20, False, held),
    ])
    detail = _seen(term, _submit(term, BROKEN)["id"])[0]
    assert [(c["name"], c["message"]) for c in detail["checks"]] == [("value", ""), ("dtype", held)]
    token = term.tokens["ann"]["Authorization"].removeprefix("Bearer ")
    assert term.client.post("/login", data={"token": token}, follow_redirects=False).status_code == 303
    page = term.client.get(f"/dashboard/submissions/{detail['id']}")
    assert page.status_code == 200 and "– not counted yet" in page.text and held in page.text


@pytest.fixture
def live(settings: Settings, clock: FakeClock) -> Iterator[tuple[Term, str]]:
    """A real server on a free port (uvicorn over HTTP) that answers a syntax error, with the fake clock."""
    settings = settings.model_copy(update={"RATE_LIMIT": "1000/minute", "MAX_QUEUED_PER_USER": 100})
    app = create_app(settings, FakeGrader(SYNTAX).factory, clock=clock)  # type: ignore[arg-type]
    with live_server(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        state = app.state.grader
        with transaction(state.session_factory) as session:
            token = create_user(session, "prof", Role.INSTRUCTOR, settings.secret_bytes).token
        yield Term(Api(client, state), clock, {"Authorization": f"Bearer {token}"}), url  # type: ignore[arg-type]


def test_ppo_submit_shows_the_syntax_error_and_exits_1_under_hidden_until_due(
    live: tuple[Term, str], tmp_path: Path
) -> None:
    """The real ``ppo-submit`` against the real server: the line, the caret, exit code 1 (it was
    "Received and graded; released on ..." with exit code 0)."""
    term, url = live
    term.course(COURSE)
    term.enroll(COURSE, "ann")
    term.publish(COURSE, release_at=RELEASE, due_at=DUE, feedback_policy="hidden-until-due")
    term.clock.now = RELEASE + HOUR
    (tmp_path / "mine.py").write_text(BROKEN)
    token = term.tokens["ann"]["Authorization"].removeprefix("Bearer ")
    environ = {**os.environ, "PPO_GRADER_URL": url, "PPO_GRADER_TOKEN": token,
               "XDG_CONFIG_HOME": str(tmp_path / "config"), "NO_COLOR": "1", "COLUMNS": "120"}
    done = subprocess.run([str(Path(sys.executable).parent / "ppo-submit"), "mine.py", "--course", COURSE,
                           "--exercise", "actor-loss"], env=environ, capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "syntax_error" in done.stdout and "mine.py:2:" in done.stdout and "^" in done.stdout, done.stdout
    assert "your code never reached a check" in done.stdout and "Received and graded" not in done.stdout
