"""Issue 25 on the learner's side: ``history`` shows the late mark and the score that counts
(with corrections) in the course's zone, ``--json`` keeps ISO UTC; tokens lose stray
whitespace (and the CLI says so); ``exercises`` wraps between fields; ``ppo-submit -``."""

from __future__ import annotations

import json

from ppo_submit.cli import route
from ppo_submit.courses import wrap_fields

from .conftest import LOGGED_IN, Invoke
from .fakes import TOKEN, FakeGrader, graded

LATE = {
    "id": 3, "exercise": "actor-loss", "user": "ada", "status": "done", "verdict": "graded", "score": 100.0,
    "message": "", "created_at": "2026-12-11T17:00:00Z", "started_at": None, "finished_at": None,
    "course": "rlhf-a", "late": True, "late_seconds": 3600, "penalty_percent": 10.0, "counted_score": 90.0,
}
SCORES = {"course": "rlhf-a", "time_zone": "Europe/Paris", "scores": [
    {"learner": "ada", "exercise": "actor-loss", "counted_score": 85.0, "attempts": 1, "late": False,
     "override": {"score": 85.0, "reason": "checked by hand", "made_by": "prof", "made_at": "2026-12-12T10:00:00+01:00"},
     "excused": None, "described": "85 (override by prof: checked by hand)"},
    {"learner": "ada", "exercise": "gae", "counted_score": None, "attempts": 0, "late": False, "override": None,
     "excused": None, "described": "-"},
]}


def _course(grader: FakeGrader) -> None:
    grader.courses = [{"slug": "rlhf-a", "title": "RLHF A", "time_zone": "Europe/Paris", "role": "learner"}]
    grader.submissions[3] = dict(LATE)
    grader.scores["rlhf-a"] = SCORES


def test_history_shows_the_late_mark_the_score_that_counts_and_local_times(invoke: Invoke, grader: FakeGrader) -> None:
    _course(grader)
    result = invoke("history", env={**LOGGED_IN, "COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if line.lstrip().startswith("3 "))
    assert "2026-12-11 18:00 CET" in row and "late 1h: -10%" in row and row.rstrip().endswith("90")
    assert "T17:00:00" not in result.stdout  # no raw ISO, no microseconds
    assert "actor-loss: 85 (override by prof: checked by hand)" in result.stdout
    assert "gae:" not in result.stdout  # never attempted: nothing to say


def test_history_json_keeps_iso_utc_and_carries_the_scores(invoke: Invoke, grader: FakeGrader) -> None:
    _course(grader)
    result = invoke("history", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["submissions"][0]["created_at"] == "2026-12-11T17:00:00Z"
    assert data["submissions"][0]["counted_score"] == 90.0
    assert data["scores"][0]["scores"][0]["described"] == "85 (override by prof: checked by hand)"


def test_a_server_from_before_the_rename_names_the_score_shown(invoke: Invoke, grader: FakeGrader) -> None:
    """A server from before issue 33 writes a score's text as ``shown`` only: the client reads it."""
    _course(grader)
    grader.scores["rlhf-a"] = {**SCORES, "scores": [
        {("shown" if k == "described" else k): v for k, v in s.items()} for s in SCORES["scores"]]}
    result = invoke("history", env={**LOGGED_IN, "COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    assert "actor-loss: 85 (override by prof: checked by hand)" in result.stdout


def test_a_token_with_a_trailing_cr_or_space_is_cleaned_and_the_cli_says_so(invoke: Invoke, grader: FakeGrader) -> None:
    grader.submissions[3] = dict(LATE)
    result = invoke("history", env={**LOGGED_IN, "PPO_GRADER_TOKEN": f" {TOKEN}\r"})
    assert result.exit_code == 0, result.output
    assert "removed whitespace" in result.stderr and "Illegal header" not in result.output
    assert all(r.headers["Authorization"] == f"Bearer {TOKEN}" for r in grader.requests)


def test_exercise_lines_break_between_fields_never_inside_one() -> None:
    fields = [("actor-loss", ""), ("compute_actor_loss", ""), ("late", ""), ("due 2026-12-11 17:00 +01:00", ""),
              ("late by 1d 2h; closes in 1d", ""), ("late: -10% per day", ""), ("attempts 2/5", "")]
    lines = [line.plain for line in wrap_fields(fields, 80)]
    assert all(len(line) <= 80 for line in lines) and len(lines) == 2
    assert any("late: -10% per day" in line for line in lines)  # whole, not "p/er day"
    assert "".join(lines).replace(" ", "") == "".join(text for text, _ in fields).replace(" ", "")


def test_dash_reads_the_source_from_stdin(invoke: Invoke, grader: FakeGrader) -> None:
    assert route(["-"]) == ["submit", "-"]
    grader.final = graded(100.0)
    source = "def compute_actor_loss(a, b, c, clip_range=0.2):\n    return 0.0\n"
    result = invoke("-", input=source)
    assert result.exit_code == 0, result.output
    body = json.loads(grader.posted()[0].content)
    assert body["source"] == source and body["exercise"] == "actor-loss" and body["filename"] == "stdin.py"
