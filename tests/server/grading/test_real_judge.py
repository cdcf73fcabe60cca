"""The server with the real judge and jail: what a learner gets end to end over HTTP."""

from __future__ import annotations

from exercises.registry import get_exercise

from server.app import real_grader
from tests.server.conftest import StartApi


def test_real_judge_grades_reference_starter_and_broken_source(start_api: StartApi) -> None:
    api = start_api(grader_factory=real_grader)
    headers = api.user("alice")
    exercise = get_exercise("actor-loss")
    submitted = {
        "reference": api.submit(headers, source=exercise.reference_source).json()["id"],
        "starter": api.submit(headers, source=exercise.starter).json()["id"],
        "broken": api.submit(headers, source="def compute_actor_loss(:\n    pass\n").json()["id"],
    }
    reference = api.wait_done(headers, submitted["reference"], timeout=240)
    assert (reference["verdict"], reference["score"]) == ("graded", 100.0), reference["message"]
    assert reference["checks"] and all(check["passed"] for check in reference["checks"])
    assert reference["timings"]["grade_seconds"] > 0

    starter = api.wait_done(headers, submitted["starter"], timeout=240)
    assert starter["verdict"] != "internal_error", starter["message"]
    assert starter["score"] is None or starter["score"] < 100

    broken = api.wait_done(headers, submitted["broken"], timeout=240)
    assert broken["verdict"] == "syntax_error"
    assert broken["score"] is None or broken["score"] == 0
