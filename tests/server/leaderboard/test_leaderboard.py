"""Leaderboard rules: best over graded runs only, ties by time, stable order, names."""

from __future__ import annotations

from server.models import DEFAULT_COURSE_ID, Role
from server.security import pseudonym
from tests.server.rows import Rows, at
from tests.server.conftest import Api

BOARD = "/api/v1/leaderboard"


def _board(api: Api, headers: dict[str, str], **params: object) -> dict:  # type: ignore[type-arg]
    response = api.client.get(BOARD, headers=headers, params=params)
    assert response.status_code == 200, response.text
    return response.json()


def test_ties_are_broken_by_the_time_the_best_was_first_reached(api: Api, rows: Rows) -> None:
    teacher = api.user("teacher", Role.INSTRUCTOR)
    for name in ("ann", "ben", "cat"):
        api.user(name)
    rows.add("ann", score=80, minute=5)
    rows.add("ben", score=80, minute=2)  # same best, reached earlier: ranks first
    rows.add("ben", score=80, minute=9)  # reaching it again does not move the time
    rows.add("cat", score=90, minute=30)
    board = _board(api, teacher, exercise="actor-loss")
    assert [(e["name"], e["board_score"], e["attempts"]) for e in board["entries"]] == [
        ("cat", 90, 1), ("ben", 80, 2), ("ann", 80, 1),
    ]
    assert board["entries"][1]["best_reached_at"].startswith(at(2).strftime("%Y-%m-%dT%H:%M:%S"))
    assert [e["rank"] for e in board["entries"]] == [1, 2, 3]
    assert board["total"] == 3


def test_exact_ties_fall_back_to_the_pseudonym_and_paging_is_stable(api: Api, rows: Rows) -> None:
    teacher = api.user("teacher", Role.INSTRUCTOR)
    names = [f"l{i}" for i in range(7)]
    for name in names:
        api.user(name)
        rows.add(name, score=50, minute=1)  # identical best and time: the pseudonym's order, not the id's
    secret = api.state.settings.secret_bytes
    names.sort(key=lambda n: pseudonym(rows.user_id(n), secret, DEFAULT_COURSE_ID))
    pages = [_board(api, teacher, exercise="actor-loss", limit=3, offset=o)["entries"] for o in (0, 3, 6)]
    assert [e["name"] for page in pages for e in page] == names
    assert [e["rank"] for page in pages for e in page] == list(range(1, 8))


def test_a_crash_after_a_100_does_not_lower_the_best(api: Api, rows: Rows) -> None:
    teacher = api.user("teacher", Role.INSTRUCTOR)
    api.user("ann")
    rows.add("ann", score=100, minute=1)
    rows.add("ann", score=None, verdict="crashed", minute=2)
    rows.add("ann", score=None, verdict="time_limit", minute=3)
    rows.add("ann", score=40, minute=4)  # a worse graded run does not lower it either
    rows.add("ann", score=None, verdict="internal_error", minute=5)  # not an attempt
    rows.add("ann", score=None, minute=6, status="queued")  # not finished: not an attempt
    entry = _board(api, teacher, exercise="actor-loss")["entries"][0]
    assert (entry["board_score"], entry["attempts"], entry["solved"]) == (100, 4, 1)
    assert entry["best_reached_at"].startswith("2026-01-01T12:01:00")


def test_only_failures_rank_last_with_zero(api: Api, rows: Rows) -> None:
    teacher = api.user("teacher", Role.INSTRUCTOR)
    api.user("ann")
    api.user("ben")
    rows.add("ann", score=None, verdict="syntax_error", minute=1)
    rows.add("ben", score=0, minute=9)
    entries = _board(api, teacher, exercise="actor-loss")["entries"]
    assert [(e["name"], e["board_score"], e["best_reached_at"] is None) for e in entries] == [
        ("ben", 0, False), ("ann", 0, True),
    ]


def test_instructors_and_internal_errors_only_are_not_ranked(api: Api, rows: Rows) -> None:
    teacher = api.user("teacher", Role.INSTRUCTOR)
    api.user("ann")
    rows.add("teacher", score=100)
    rows.add("ann", score=None, verdict="internal_error")
    assert _board(api, teacher)["entries"] == []


def test_overall_board_sums_best_per_exercise(api: Api, rows: Rows) -> None:
    teacher = api.user("teacher", Role.INSTRUCTOR)
    api.user("ann")
    api.user("ben")
    rows.add("ann", score=100, minute=1, exercise="actor-loss")
    rows.add("ann", score=60, minute=4, exercise="gae")
    rows.add("ann", score=20, minute=5, exercise="gae")
    rows.add("ben", score=100, minute=2, exercise="actor-loss")
    rows.add("ben", score=60, minute=3, exercise="gae")
    board = _board(api, teacher)
    assert board["exercise"] is None
    assert [(e["name"], e["board_score"], e["attempts"], e["solved"]) for e in board["entries"]] == [
        ("ben", 160, 2, 1), ("ann", 160, 3, 1),  # ben completed his total first (minute 3)
    ]


def test_learners_see_display_names_instructors_real_names(api: Api, rows: Rows) -> None:
    teacher = api.user("teacher", Role.INSTRUCTOR)
    ann = api.user("ann")
    rows.add("ann", score=10)
    as_learner = _board(api, ann)["entries"][0]
    ann_id = rows.user_id("ann")
    assert (as_learner["learner"], as_learner["name"], as_learner["is_you"]) == (
        pseudonym(ann_id, api.state.settings.secret_bytes, DEFAULT_COURSE_ID), None, True)
    as_teacher = _board(api, teacher)["entries"][0]
    assert (as_teacher["name"], as_teacher["is_you"]) == ("ann", False)


def test_pseudonyms_for_learners_by_default_real_names_for_instructors(api: Api) -> None:
    rows = Rows(api)
    teacher = api.user("teacher", Role.INSTRUCTOR)
    ann = api.user("ann")
    api.user("ben")
    rows.add("ann", score=90)
    rows.add("ben", score=80)
    ann_id, ben_id = rows.user_id("ann"), rows.user_id("ben")
    secret = api.state.settings.secret_bytes
    seen_by_ann = _board(api, ann)["entries"]
    assert [e["learner"] for e in seen_by_ann] == [pseudonym(ann_id, secret, DEFAULT_COURSE_ID), pseudonym(ben_id, secret, DEFAULT_COURSE_ID)]
    assert all(e["name"] is None for e in seen_by_ann)
    assert "ann" not in str(seen_by_ann) and "ben" not in str(seen_by_ann).replace(pseudonym(ben_id, secret, DEFAULT_COURSE_ID), "")
    assert pseudonym(ann_id, secret, DEFAULT_COURSE_ID) == pseudonym(ann_id, secret, DEFAULT_COURSE_ID) != pseudonym(ann_id, b"other-secret", DEFAULT_COURSE_ID)
    seen_by_teacher = _board(api, teacher)["entries"]
    assert [(e["learner"], e["name"]) for e in seen_by_teacher] == [("ann", "ann"), ("ben", "ben")]
    # The course's instructor opts in to real names, for this course only; a learner may not.
    refused = api.client.patch("/api/v1/courses/default/settings", json={"board_real_names": True}, headers=ann)
    assert refused.status_code == 403
    opted = api.client.patch("/api/v1/courses/default/settings", json={"board_real_names": True}, headers=teacher)
    assert opted.status_code == 200 and opted.json() == {"board_real_names": True}
    assert [(e["learner"], e["name"]) for e in _board(api, ann)["entries"]] == [("ann", None), ("ben", None)]


def test_speed_board_ranks_100s_by_cpu_then_memory(api: Api, rows: Rows) -> None:
    teacher = api.user("teacher", Role.INSTRUCTOR)
    ann = api.user("ann")
    for name in ("ben", "cat", "dan"):
        api.user(name)
    rows.add("ann", score=100, cpu=0.9, memory=10, minute=1)
    fast = rows.add("ann", score=100, cpu=0.2, memory=50, minute=2)  # her best run counts
    rows.add("ben", score=100, cpu=0.2, memory=40, minute=3)  # same cpu, less memory: first
    rows.add("cat", score=99, cpu=0.01, memory=1, minute=4)  # not a 100: not on this board
    rows.add("dan", score=100, cpu=0.5, memory=1, minute=5)
    rows.add("dan", score=None, verdict="crashed", cpu=0.0, memory=0, minute=6)
    speed = api.client.get(f"{BOARD}/actor-loss/speed", headers=teacher).json()
    assert [(e["name"], e["cpu_seconds"], e["peak_memory_bytes"]) for e in speed["entries"]] == [
        ("ben", 0.2, 40), ("ann", 0.2, 50), ("dan", 0.5, 1),
    ]
    assert speed["entries"][1]["submission_id"] == fast
    as_ann = api.client.get(f"{BOARD}/actor-loss/speed", headers=ann).json()["entries"]
    assert [e["submission_id"] for e in as_ann] == [None, fast, None]


def test_unknown_exercise_is_404(api: Api) -> None:
    teacher = api.user("teacher", Role.INSTRUCTOR)
    response = api.client.get(BOARD, headers=teacher, params={"exercise": "nope"})
    assert response.status_code == 404 and response.json()["error"] == "ExerciseNotFound"
    assert api.client.get(f"{BOARD}/nope/speed", headers=teacher).status_code == 404


def test_a_learner_reading_another_learners_submission_gets_404(api: Api, rows: Rows) -> None:
    api.user("ann")
    ben = api.user("ben")
    theirs = rows.add("ann", score=100)
    response = api.client.get(f"/api/v1/submissions/{theirs}", headers=ben)
    assert response.status_code == 404 and response.json()["error"] == "SubmissionNotFound"
    missing = api.client.get("/api/v1/submissions/999999", headers=ben)
    assert missing.json()["detail"].replace("999999", str(theirs)) == response.json()["detail"]
    teacher = api.user("teacher", Role.INSTRUCTOR)
    assert api.client.get(f"/api/v1/submissions/{theirs}", headers=teacher).status_code == 200
