"""Courses in ``ppo-submit``: the per-course listing, the late warning before sending,
``--course``/``--yes``, and the default course remembered by ``login``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import Invoke
from .fakes import FakeGrader, graded

COURSES = [
    {"slug": "fall-a", "title": "RLHF A", "time_zone": "Europe/Paris", "role": "learner"},
    {"slug": "fall-b", "title": "RLHF B", "time_zone": "UTC", "role": "learner"},
]


def window(status: str, seconds_to_due: int, **extra: Any) -> dict[str, Any]:
    return {
        "exercise": "actor-loss", "title": "PPO actor loss", "function": "compute_actor_loss", "status": status,
        "release_at": "2026-12-07T09:00:00+01:00", "due_at": "2026-12-11T17:00:00+01:00",
        "close_at": "2026-12-13T17:00:00+01:00", "extended": False, "seconds_to_due": seconds_to_due,
        "seconds_to_close": seconds_to_due + 2 * 86_400, "penalty_percent": 10.0, "penalty_unit": "day",
        "max_attempts": 5, "attempts_used": 1, **extra,
    }


def listing(slug: str, *windows: dict[str, Any]) -> dict[str, Any]:
    return {"course": slug, "title": slug.upper(), "time_zone": "Europe/Paris", "now": "2026-12-09T10:00:00+01:00",
            "exercises": list(windows)}


@pytest.fixture
def two_courses(grader: FakeGrader) -> FakeGrader:
    grader.courses = COURSES
    grader.windows = {
        "fall-a": listing("fall-a", window("open", 2 * 86_400 + 3 * 3_600)),
        "fall-b": listing("fall-b", window("late", -3_600)),
    }
    return grader


def test_exercises_lists_each_course_with_due_dates_and_time_left(invoke: Invoke, two_courses: FakeGrader) -> None:
    result = invoke("exercises")
    assert result.exit_code == 0, result.output
    out = result.stdout
    for text in ("fall-a", "fall-b", "compute_actor_loss", "2026-12-11 17:00 +01:00", "2d 3h left", "late by 1h",
                 "-10% per day", "1/5"):
        assert text in out, out
    only_b = invoke("exercises", "--course", "fall-b").stdout
    assert "fall-b" in only_b and "fall-a" not in only_b
    wrong = invoke("exercises", "--course", "nope")
    assert wrong.exit_code == 2 and "fall-a, fall-b" in wrong.stderr


def test_exercises_on_a_server_without_courses_lists_the_catalogue(invoke: Invoke) -> None:
    result = invoke("exercises")
    assert result.exit_code == 0 and "compute_actor_loss" in result.stdout


def test_a_late_submission_warns_and_asks_first(invoke: Invoke, two_courses: FakeGrader, solution: Path) -> None:
    refused = invoke(str(solution), "--course", "fall-b", input="n\n")
    assert refused.exit_code == 2
    assert "was due 2026-12-11 17:00 +01:00 in fall-b (1h ago)" in refused.stderr
    assert "10% of its score per day" in refused.stderr and "pass --yes" in refused.stderr
    no_answer = invoke(str(solution), "--course", "fall-b")  # stdin closed, as in a script
    assert no_answer.exit_code == 2 and "pass --yes" in no_answer.stderr
    assert two_courses.submissions == {}  # nothing stored (the server said it is late: 409)
    two_courses.final = {**graded(80.0), "late": True, "late_seconds": 3_600, "penalty_percent": 10.0, "counted_score": 72.0}
    sent = invoke(str(solution), "--course", "fall-b", input="y\n")
    assert sent.exit_code == 1, sent.output
    assert json.loads(two_courses.posted()[0].content)["course"] == "fall-b"
    assert "score that counts is 72 (raw 80" in sent.stderr


def test_yes_sends_a_late_submission_without_asking(invoke: Invoke, two_courses: FakeGrader, solution: Path) -> None:
    result = invoke(str(solution), "--course", "fall-b", "--yes")
    assert result.exit_code == 0, result.output
    assert "warning:" in result.stderr and len(two_courses.submissions) == 1


def test_on_time_sends_without_a_question(invoke: Invoke, two_courses: FakeGrader, solution: Path) -> None:
    result = invoke(str(solution), "--course", "fall-a")
    assert result.exit_code == 0 and "warning" not in result.stderr
    assert json.loads(two_courses.posted()[0].content)["course"] == "fall-a"


def test_in_several_courses_without_a_choice_the_server_decides(invoke: Invoke, two_courses: FakeGrader, solution: Path) -> None:
    result = invoke(str(solution))
    assert result.exit_code == 0
    assert "course" not in json.loads(two_courses.posted()[0].content)


def test_login_remembers_a_default_course(invoke: Invoke, two_courses: FakeGrader, solution: Path, isolated_config: Path) -> None:
    from .fakes import SERVER, TOKEN

    login = invoke("login", "--server", SERVER, "--token", TOKEN, "--course", "fall-b", env={})
    assert login.exit_code == 0, login.output
    assert json.loads(isolated_config.read_text())["course"] == "fall-b"
    result = invoke(str(solution), "--yes")  # fall-b's actor-loss is late: warned
    assert "in fall-b" in result.stderr
    assert json.loads(two_courses.posted()[0].content)["course"] == "fall-b"
    unknown = invoke("login", "--server", SERVER, "--token", TOKEN, "--course", "nope", env={})
    assert unknown.exit_code == 2 and "not in a course called 'nope'" in unknown.stderr
