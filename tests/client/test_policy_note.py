"""The client names what an exercise's feedback policy held back (the server decides; the
terminal and the notebook's HTML only say it), and exits 0 for a verdict held back."""

from __future__ import annotations

from typing import cast

from ppo_submit.api import Submission
from ppo_submit.cli import exit_code
from ppo_submit.html import submission_html
from ppo_submit.render import plain_text, policy_note, submission_result

HIDDEN = cast(Submission, {"id": 7, "exercise": "gae", "status": "done", "verdict": None, "score": None, "checks": [],
          "message": "Received and graded; the score and feedback are released on 2026-12-11 17:00:00 CET.",
          "feedback": None, "feedback_view": "hidden", "feedback_policy": "hidden-until-due"})
SCORED = cast(Submission, {"id": 8, "exercise": "gae", "status": "done", "verdict": "graded", "score": 40.0, "message": "",
          "checks": [{"name": "values", "weight": 40, "passed": True, "message": ""},
                     {"name": "masking", "weight": 60, "passed": False, "message": ""}],
          "feedback": None, "feedback_view": "score", "feedback_policy": "tokens:3", "tokens_left": 2,
          "token_spent": False})


def test_the_note_says_what_is_held_back_and_the_tokens_left() -> None:
    assert policy_note({"feedback_view": "full"}) is None and policy_note(Submission()) is None
    assert policy_note(SCORED) == ("feedback (tokens:3): the score and the check names only · "
                                   "2 tokens left today (ppo-submit token 8)")
    spent = policy_note(cast(Submission, {**SCORED, "feedback_view": "report", "token_spent": True}))
    assert spent is not None and spent.endswith("a token was spent on it")


def test_terminal_and_notebook_show_it() -> None:
    text = plain_text(submission_result(HIDDEN), 100)
    assert "feedback (hidden-until-due): received and graded" in text and "Score:" not in text
    assert "released on 2026-12-11 17:00:00 CET" in text
    # a message that came anyway (an older server's row) is not laid out under a score view
    said = cast(Submission, {**SCORED, "checks": [{**c, "message": "expected 1, got 2"} for c in SCORED["checks"]]})
    scored = plain_text(submission_result(said), 100)
    assert "Score: 40 / 100" in scored and "masking" in scored and "Why checks failed" not in scored
    assert "Why checks failed" in plain_text(submission_result(cast(Submission, {**said, "feedback_view": "full"})), 100)
    assert "feedback (hidden-until-due)" in submission_html(HIDDEN)


def test_a_held_back_verdict_exits_0() -> None:
    assert exit_code(HIDDEN) == 0 and exit_code(SCORED) == 1
    assert exit_code(cast(Submission, {**HIDDEN, "verdict": "internal_error"})) == 2
