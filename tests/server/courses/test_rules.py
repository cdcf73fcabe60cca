"""Release, due, close, extension, penalty and attempt rules, each at its boundary and one
second either side, through the API with an injected clock (SQLite and PostgreSQL)."""

from __future__ import annotations

import csv
import io

import pytest

from tests.server.courses.conftest import CLOSE, DAY, DUE, HOUR, RELEASE, SECOND, Term


@pytest.fixture
def fall(term: Term) -> Term:
    """Course ``fall-a`` (Paris time): actor-loss opens Monday 09:00, due Friday 17:00,
    closes Sunday 17:00, 10% per started day late; ann and ben enrolled."""
    term.course("fall-a")
    term.enroll("fall-a", "ann", "ben")
    answer = term.publish("fall-a", release_at=RELEASE, due_at=DUE, close_at=CLOSE, penalty_percent=10, penalty_unit="day")
    assert answer.status_code == 200, answer.text
    return term


def _accepted(result: object) -> dict:  # type: ignore[type-arg]
    assert isinstance(result, dict), getattr(result, "text", result)
    assert result["status"] == "done" and result["course"] == "fall-a"
    return result


def test_release_boundary(fall: Term) -> None:
    before = fall.submit_at(RELEASE - SECOND, "ann")
    # 404, as for an exercise the course never published: nothing of it before its release,
    # not even its date (review 4, finding 14)
    assert before.status_code == 404
    assert before.json()["error"] == "ExerciseNotFound" and "2026-12-07" not in before.json()["detail"]
    fall.clock.now = RELEASE - SECOND
    listed = fall.client.get("/api/v1/courses/fall-a/exercises", headers=fall.tokens["ann"]).json()
    assert listed["exercises"] == []  # not listed before its release either
    catalogue = fall.client.get("/api/v1/exercises", headers=fall.tokens["ann"]).json()
    assert catalogue == []  # nor in the catalogue, for a learner of the course
    for moment in (RELEASE, RELEASE + SECOND):
        assert _accepted(fall.submit_at(moment, "ann"))["late"] is False
    assert [e["slug"] for e in fall.client.get("/api/v1/exercises", headers=fall.tokens["ann"]).json()] == ["actor-loss"]
    fall.clock.now = RELEASE
    listed = fall.client.get("/api/v1/courses/fall-a/exercises", headers=fall.tokens["ann"]).json()
    assert [e["exercise"] for e in listed["exercises"]] == ["actor-loss"]
    assert listed["exercises"][0]["due_at"] == "2026-12-11T17:00:00+01:00"


def test_due_boundary_and_day_penalty(fall: Term) -> None:
    for moment in (DUE - SECOND, DUE):
        on_time = _accepted(fall.submit_at(moment, "ann"))
        assert (on_time["late"], on_time["late_seconds"], on_time["penalty_percent"]) == (False, None, 0)
        assert on_time["counted_score"] == on_time["score"] == 75
    one_second = _accepted(fall.submit_at(DUE + SECOND, "ann"))
    assert (one_second["late"], one_second["late_seconds"], one_second["penalty_percent"]) == (True, 1, 10)
    assert (one_second["score"], one_second["counted_score"]) == (75, 67.5)  # raw kept, penalty applied
    assert _accepted(fall.submit_at(DUE + DAY, "ben"))["penalty_percent"] == 10
    assert _accepted(fall.submit_at(DUE + DAY + SECOND, "ben"))["penalty_percent"] == 20


def test_close_boundary(fall: Term) -> None:
    assert _accepted(fall.submit_at(CLOSE - SECOND, "ann"))["late"] is True
    at_close = _accepted(fall.submit_at(CLOSE, "ann"))
    assert (at_close["late"], at_close["penalty_percent"]) == (True, 20)
    after = fall.submit_at(CLOSE + SECOND, "ann")
    assert after.status_code == 403
    assert after.json()["error"] == "SubmissionsClosed"
    assert "2026-12-13 17:00:00 CET (Europe/Paris)" in after.json()["detail"]


def test_extension_boundary_for_one_learner_only(fall: Term) -> None:
    extended = CLOSE + DAY  # past the close: the close moves with it, for ann only
    granted = fall.client.put(
        "/api/v1/courses/fall-a/extensions/ann/actor-loss", json={"due_at": "2026-12-14T17:00:00"},  # Paris time
        headers=fall.instructor,
    )
    assert granted.status_code == 200, granted.text
    assert granted.json()["due_at"] == "2026-12-14T17:00:00+01:00"
    assert _accepted(fall.submit_at(extended - SECOND, "ann"))["late"] is False
    assert _accepted(fall.submit_at(extended, "ann"))["late"] is False
    assert fall.submit_at(extended + SECOND, "ann").json()["error"] == "SubmissionsClosed"
    # ben has no extension: late after Friday, closed after Sunday.
    assert _accepted(fall.submit_at(DUE + SECOND, "ben"))["late"] is True
    assert fall.submit_at(CLOSE + SECOND, "ben").json()["error"] == "SubmissionsClosed"
    fall.clock.now = CLOSE + HOUR
    mine = fall.client.get("/api/v1/courses/fall-a/exercises", headers=fall.tokens["ann"]).json()["exercises"][0]
    assert (mine["status"], mine["extended"], mine["seconds_to_due"]) == ("open", True, 23 * 3600)
    bens = fall.client.get("/api/v1/courses/fall-a/exercises", headers=fall.tokens["ben"]).json()["exercises"][0]
    assert (bens["status"], bens["extended"]) == ("closed", False)


def test_extension_inside_the_window_keeps_the_close(fall: Term) -> None:
    fall.client.put("/api/v1/courses/fall-a/extensions/ann/actor-loss",
                    json={"due_at": (DUE + DAY).isoformat()}, headers=fall.instructor).raise_for_status()
    assert _accepted(fall.submit_at(DUE + DAY, "ann"))["late"] is False
    late = _accepted(fall.submit_at(DUE + DAY + SECOND, "ann"))
    assert (late["late_seconds"], late["penalty_percent"]) == (1, 10)  # counted from the extended date
    assert fall.submit_at(CLOSE + SECOND, "ann").json()["error"] == "SubmissionsClosed"


def test_hour_penalty_capped_at_the_raw_score(term: Term) -> None:
    term.course("sprint", time_zone="UTC")
    term.enroll("sprint", "ann")
    term.publish("sprint", due_at=DUE, penalty_percent=40, penalty_unit="hour").raise_for_status()
    cases = [(DUE + HOUR, 40, 45.0), (DUE + HOUR + SECOND, 80, 15.0), (DUE + 3 * HOUR, 100, 0.0)]
    for moment, penalty, counted in cases:
        result = term.submit_at(moment, "ann")
        assert (result["penalty_percent"], result["score"], result["counted_score"]) == (penalty, 75, counted)


def test_flag_only_policy_and_attempt_limit(term: Term) -> None:
    term.course("lab", time_zone="America/New_York")
    term.enroll("lab", "ann")
    term.publish("lab", due_at=DUE, max_attempts=2).raise_for_status()
    late = term.submit_at(DUE + DAY, "ann")
    assert (late["late"], late["penalty_percent"], late["counted_score"]) == (True, 0, 75)
    term.submit_at(DUE + 2 * DAY, "ann")
    third = term.submit_at(DUE + 3 * DAY, "ann")
    assert (third.status_code, third.json()["error"]) == (403, "AttemptLimitReached")


def test_course_rules_are_refused_when_out_of_order_or_unknown(term: Term) -> None:
    term.course("lab", time_zone="UTC")
    bad = term.publish("lab", due_at=DUE, close_at=DUE - SECOND)
    assert (bad.status_code, bad.json()["error"]) == (422, "InvalidCourse")
    unknown = term.publish("lab", exercise="no-such-exercise", due_at=DUE)
    assert (unknown.status_code, unknown.json()["error"]) == (404, "ExerciseNotFound")
    zone = term.client.post("/api/v1/courses", json={"slug": "x", "time_zone": "Mars/Olympus"}, headers=term.instructor)
    assert (zone.status_code, zone.json()["error"]) == (422, "InvalidCourse")
    term.enroll("lab", "ann")
    unpublished = term.submit_at(DUE, "ann", exercise="gae")
    assert (unpublished.status_code, unpublished.json()["error"]) == (404, "ExerciseNotFound")
    learner_publishes = term.publish("lab", headers=term.tokens["ann"], due_at=DUE)
    assert learner_publishes.status_code == 403


def test_the_score_that_counts_ranks_and_the_raw_best_stays_visible(fall: Term) -> None:
    fall.submit_at(DUE + SECOND, "ann")  # 75 raw, 67.5 counts
    fall.submit_at(DUE - SECOND, "ben")  # 75 on time
    board = fall.client.get("/api/v1/leaderboard?course=fall-a&exercise=actor-loss", headers=fall.instructor).json()
    assert [(e["name"], e["board_score"], e["raw_best_score"]) for e in board["entries"]] == [
        ("ben", 75, 75), ("ann", 67.5, 75),
    ]
    text = fall.client.get("/api/v1/gradebook.csv?course=fall-a", headers=fall.instructor).text
    ann = next(row for row in csv.DictReader(io.StringIO(text)) if row["learner"] == "ann")
    assert (ann["counted_score"], ann["raw_best_score"], ann["counted_late"]) == ("67.5", "75", "yes")
    assert (ann["penalty_percent"], ann["described"]) == ("10", "67.5 (raw 75, late 1m: -10%)")
    assert ann["shown"] == ann["described"]  # the old column name, deprecated, last for one release
    assert ann["counted_submission_id"].isdigit()


def test_learner_in_several_courses_must_choose(term: Term) -> None:
    for slug in ("fall-a", "fall-b"):
        term.course(slug)
        term.publish(slug, due_at=DUE).raise_for_status()
    term.enroll("fall-a", "ann")
    term.enroll("fall-b", "ann")
    refused = term.submit_at(DUE, "ann")
    assert (refused.status_code, refused.json()["error"]) == (422, "CourseRequired")
    assert "fall-a, fall-b" in refused.json()["detail"]
    assert term.submit_at(DUE, "ann", course="fall-b")["course"] == "fall-b"
    mine = term.client.get("/api/v1/courses", headers=term.tokens["ann"]).json()
    assert [(c["slug"], c["role"]) for c in mine] == [("fall-a", "learner"), ("fall-b", "learner")]


