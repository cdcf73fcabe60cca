"""Feedback policies through the API: for each policy a learner sees exactly what it allows, on
every route that returns a submission (detail, long poll, list, an idempotent replay, the token
route) and on the boards; instructors see everything; hidden-until-due releases at the due date
by the app's injected clock; tokens:N counts per day in the course's zone."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from alembic import command
from sqlalchemy import event, inspect, text

from server.config import Settings
from server.courses.feedback_cut import CUT_NOTE, cut_raised, quoted_type
from server.courses.feedback_policy import FeedbackPolicy, PolicyKind
from server.db import make_engine
from server.errors import InvalidCourse
from server.migrations import alembic_config
from tests.server.courses.conftest import DAY, DUE, HOUR, RELEASE, SECOND, Term
from tests.server.courses.feedback_fixtures import CHECK_NAMES, EXPECTED, EXPECTED_CUT, PRINTED, RAISED, leaky_report
from tests.server.fakes import FakeGrader

COURSE = "rlhf-a"


@pytest.fixture
def grader() -> FakeGrader:
    return FakeGrader(leaky_report())


def _setup(term: Term, policy: str, **rules: Any) -> None:
    term.course(COURSE)
    term.enroll(COURSE, "ann", "bob")
    answer = term.publish(COURSE, release_at=RELEASE, due_at=DUE, feedback_policy=policy, **rules)
    assert answer.status_code == 200, answer.text
    assert answer.json()["feedback_policy"] == policy


def _routes(term: Term, name: str, submission_id: int) -> dict[str, Any]:
    """Every route that returns this submission to ``name``, by route."""
    headers = term.tokens[name]
    client = term.client
    listed = client.get("/api/v1/submissions", headers=headers).json()
    return {
        "detail": client.get(f"/api/v1/submissions/{submission_id}", headers=headers).json(),
        "wait": client.get(f"/api/v1/submissions/{submission_id}?wait=1", headers=headers).json(),
        "list": next(s for s in listed if s["id"] == submission_id),
        "course list": next(s for s in client.get(f"/api/v1/submissions?course={COURSE}", headers=headers).json()
                            if s["id"] == submission_id),
    }


def _submit(term: Term, name: str, moment: Any = RELEASE + HOUR) -> dict[str, Any]:
    done = term.submit_at(moment, name, course=COURSE)
    assert done["status"] == "done", done
    return done


def _assert_full(record: dict[str, Any]) -> None:
    text = json.dumps(record)
    assert record["feedback_view"] == "full" and record["score"] == 60
    assert RAISED in text and PRINTED in text and EXPECTED in text


def _assert_score_only(record: dict[str, Any]) -> None:
    """Score and check names: nothing of what the checks said, nothing the code printed or raised."""
    text = json.dumps(record)
    assert record["feedback_view"] == "score"
    assert (record["verdict"], record["score"], record["counted_score"]) == ("graded", 60, 60)
    assert RAISED not in text and PRINTED not in text and EXPECTED not in text and "max instead of min" not in text
    assert "case 2" not in text and "seed 17" not in text
    if "checks" in record:  # the list's rows carry no checks at all
        assert [(c["name"], c["passed"], c["message"], c["mistake_title"], c["misconception"]) for c in record["checks"]] == [
            (name, name == "value", "", None, None) for name in CHECK_NAMES]
        assert (record["feedback"], record["stdout"], record["stderr"]) == (None, "", "")


def _assert_report(record: dict[str, Any]) -> None:
    """The report, without what the learner's code printed or raised on the judge's inputs."""
    text = json.dumps(record)
    assert record["feedback_view"] == "report" and record["score"] == 60
    assert RAISED not in text and PRINTED not in text
    if "checks" in record:
        # where and by how much, never the learner's returned value (review 4, finding 7)
        assert EXPECTED not in text and EXPECTED_CUT in text and "max instead of min" in text
        assert record["checks"][1]["message"] == f"Raised ValueError {CUT_NOTE}"
        cause = record["feedback"]["root_causes"][0]
        assert (cause["exception"], cause["message"]) == ("ValueError", CUT_NOTE)
        # frames are rebuilt from the stored source (review 5): the fixture's frame is not on a
        # code line of the file this test sent, so no frame and no location is shown
        assert cause["traceback"] == f"ValueError: {CUT_NOTE}" and RAISED not in cause["traceback"]
        assert (record["stdout"], record["stderr"]) == ("", "")


def _assert_hidden(record: dict[str, Any]) -> None:
    text = json.dumps(record)
    assert record["status"] == "done" and record["feedback_view"] == "hidden"
    assert (record["verdict"], record["score"], record["counted_score"]) == (None, None, None)
    assert RAISED not in text and PRINTED not in text and EXPECTED not in text and "max instead of min" not in text
    assert "released on 2026-12-11 17:00:00" in record["message"]
    if "checks" in record:
        assert (record["checks"], record["feedback"], record["stdout"]) == ([], None, "")
        assert (record["timings"], record["cpu_seconds"], record["peak_memory_bytes"]) == ({}, None, None)


def test_full_shows_everything(term: Term) -> None:
    _setup(term, "full")
    done = _submit(term, "ann")
    for route, record in _routes(term, "ann", done["id"]).items():
        if route.endswith("list"):
            assert record["feedback_view"] == "full" and record["score"] == 60
        else:
            _assert_full(record)


def test_score_shows_the_score_and_the_check_names_only(term: Term) -> None:
    _setup(term, "score")
    done = _submit(term, "ann")
    _assert_score_only(done)
    for record in _routes(term, "ann", done["id"]).values():
        _assert_score_only(record)
    # an idempotent replay answers with the graded row: the policy applies there too
    replay = term.client.post("/api/v1/submissions", json={"exercise": "actor-loss", "source": "y = 1\n", "course": COURSE},
                              headers={**term.tokens["ann"], "Idempotency-Key": "k1"})
    assert replay.status_code == 202
    again = term.client.post("/api/v1/submissions", json={"exercise": "actor-loss", "source": "y = 1\n", "course": COURSE},
                             headers={**term.tokens["ann"], "Idempotency-Key": "k1"})
    term.api.wait_done(term.tokens["ann"], again.json()["id"])
    again = term.client.post("/api/v1/submissions", json={"exercise": "actor-loss", "source": "y = 1\n", "course": COURSE},
                             headers={**term.tokens["ann"], "Idempotency-Key": "k1"})
    assert again.status_code == 200 and again.json()["status"] == "done"
    _assert_score_only(again.json())
    # the instructor sees everything, on the same routes
    _assert_full(term.client.get(f"/api/v1/submissions/{done['id']}", headers=term.instructor).json())
    # bob cannot read ann's submission by any route
    assert term.client.get(f"/api/v1/submissions/{done['id']}", headers=term.tokens["bob"]).status_code == 404
    assert term.client.post(f"/api/v1/submissions/{done['id']}/token", headers=term.tokens["bob"]).status_code == 404
    # score is not a token policy: spending one is refused, in one line
    refused = term.client.post(f"/api/v1/submissions/{done['id']}/token", headers=term.tokens["ann"])
    assert refused.status_code == 409 and refused.json()["error"] == "TokensNotInUse"


def test_hidden_until_due_releases_at_the_due_date_by_the_injected_clock(term: Term) -> None:
    _setup(term, "hidden-until-due")
    ann = _submit(term, "ann")
    bob = _submit(term, "bob", RELEASE + 2 * HOUR)
    _assert_hidden(ann)
    term.clock.now = DUE - SECOND
    for record in _routes(term, "ann", ann["id"]).values():
        _assert_hidden(record)
    # the boards do not leak it: the exercise's boards are refused, the overall board leaves it out
    board = term.client.get(f"/api/v1/leaderboard?course={COURSE}&exercise=actor-loss", headers=term.tokens["ann"])
    assert board.status_code == 403 and board.json()["error"] == "ScoresHidden"
    speed = term.client.get(f"/api/v1/leaderboard/actor-loss/speed?course={COURSE}", headers=term.tokens["ann"])
    assert speed.status_code == 403
    overall = term.client.get(f"/api/v1/leaderboard?course={COURSE}", headers=term.tokens["ann"]).json()
    assert [e["board_score"] for e in overall["entries"]] in ([], [0, 0])
    # the instructor sees everything, the board included
    _assert_full(term.client.get(f"/api/v1/submissions/{bob['id']}", headers=term.instructor).json())
    staff = term.client.get(f"/api/v1/leaderboard?course={COURSE}&exercise=actor-loss", headers=term.instructor).json()
    assert [e["board_score"] for e in staff["entries"]] == [60, 60]

    term.clock.now = DUE  # released at the due date itself
    for record in _routes(term, "ann", ann["id"]).values():
        _assert_report(record)
    board = term.client.get(f"/api/v1/leaderboard?course={COURSE}&exercise=actor-loss", headers=term.tokens["ann"])
    assert board.status_code == 200 and [e["board_score"] for e in board.json()["entries"]] == [60, 60]


def test_hidden_until_due_waits_for_a_learners_extension(term: Term) -> None:
    _setup(term, "hidden-until-due")
    ann = _submit(term, "ann")
    _submit(term, "bob")
    extended = DUE + 2 * DAY
    granted = term.client.put(f"/api/v1/courses/{COURSE}/extensions/bob/actor-loss",
                              json={"due_at": extended.isoformat()}, headers=term.instructor)
    assert granted.status_code == 200, granted.text
    bob = _submit(term, "bob", DUE + DAY)  # on time for bob
    term.clock.now = DUE + HOUR
    _assert_report(term.client.get(f"/api/v1/submissions/{ann['id']}", headers=term.tokens["ann"]).json())
    _assert_hidden_after_due(term.client.get(f"/api/v1/submissions/{bob['id']}", headers=term.tokens["bob"]).json())
    # bob's scores are still secret from bob: no board shows the exercise until his due date too
    for name in ("ann", "bob"):
        board = term.client.get(f"/api/v1/leaderboard?course={COURSE}&exercise=actor-loss", headers=term.tokens[name])
        assert board.status_code == 403
    term.clock.now = extended
    _assert_report(term.client.get(f"/api/v1/submissions/{bob['id']}", headers=term.tokens["bob"]).json())
    assert term.client.get(f"/api/v1/leaderboard?course={COURSE}&exercise=actor-loss",
                           headers=term.tokens["bob"]).status_code == 200


def _assert_hidden_after_due(record: dict[str, Any]) -> None:
    assert record["feedback_view"] == "hidden" and record["score"] is None and record["checks"] == []
    assert "released on 2026-12-13 17:00:00" in record["message"]


def test_an_exercise_taken_out_of_its_set_keeps_hiding_until_its_last_due_date(term: Term) -> None:
    """Each submission keeps the policy and due date its set last gave it (review 5, attack 4):
    publishing again (a later due date) moves them, deleting the entry keeps them, so every
    route and board stays hidden until that date, then shows the report."""
    _setup(term, "hidden-until-due")
    ann = _submit(term, "ann")
    _submit(term, "bob")
    later = term.publish(COURSE, release_at=RELEASE, due_at=DUE + 2 * DAY, feedback_policy="hidden-until-due")
    assert later.status_code == 200, later.text
    assert term.client.delete(f"/api/v1/courses/{COURSE}/exercises/actor-loss", headers=term.instructor).status_code == 200
    term.clock.now = DUE + HOUR  # past the first due date, before the one it was moved to
    for record in _routes(term, "ann", ann["id"]).values():
        assert record["feedback_view"] == "hidden" and record["score"] is None and not record.get("checks")
        assert "released on 2026-12-13 17:00:00" in record["message"]
    overall = term.client.get(f"/api/v1/leaderboard?course={COURSE}", headers=term.tokens["bob"]).json()
    assert all(e["board_score"] in (None, 0) for e in overall["entries"]), overall
    scores = term.client.get(f"/api/v1/courses/{COURSE}/scores", headers=term.tokens["ann"]).json()["scores"]
    assert all(s["counted_score"] is None for s in scores if s["exercise"] == "actor-loss"), scores
    term.clock.now = DUE + 2 * DAY
    _assert_report(term.client.get(f"/api/v1/submissions/{ann['id']}", headers=term.tokens["ann"]).json())
    overall = term.client.get(f"/api/v1/leaderboard?course={COURSE}", headers=term.tokens["bob"]).json()
    assert [e["board_score"] for e in overall["entries"]] == [60, 60]


def test_tokens_still_apply_to_an_exercise_taken_out_of_its_set(term: Term) -> None:
    _setup(term, "tokens:1")
    done = _submit(term, "ann")
    assert term.client.delete(f"/api/v1/courses/{COURSE}/exercises/actor-loss", headers=term.instructor).status_code == 200
    _assert_score_only(term.client.get(f"/api/v1/submissions/{done['id']}", headers=term.tokens["ann"]).json())
    spent = term.client.post(f"/api/v1/submissions/{done['id']}/token", headers=term.tokens["ann"])
    assert spent.status_code == 200, spent.text
    _assert_report(term.client.get(f"/api/v1/submissions/{done['id']}", headers=term.tokens["ann"]).json())


def test_tokens_give_n_reports_a_day_spent_explicitly(term: Term) -> None:
    _setup(term, "tokens:2")
    first, second, third = (_submit(term, "ann", RELEASE + n * HOUR) for n in (1, 2, 3))
    # viewing never spends a token
    for record in _routes(term, "ann", first["id"]).values():
        _assert_score_only(record)
        assert record["tokens_left"] == 2 and record["token_spent"] is False
    spent = term.client.post(f"/api/v1/submissions/{first['id']}/token", headers=term.tokens["ann"])
    assert spent.status_code == 200, spent.text
    _assert_report(spent.json())
    assert (spent.json()["token_spent"], spent.json()["tokens_left"]) == (True, 1)
    for record in _routes(term, "ann", first["id"]).values():
        _assert_report(record)
    # twice on one submission costs one token
    assert term.client.post(f"/api/v1/submissions/{first['id']}/token", headers=term.tokens["ann"]).json()["tokens_left"] == 1
    _assert_score_only(term.client.get(f"/api/v1/submissions/{second['id']}", headers=term.tokens["ann"]).json())
    assert term.client.post(f"/api/v1/submissions/{second['id']}/token", headers=term.tokens["ann"]).json()["tokens_left"] == 0
    refused = term.client.post(f"/api/v1/submissions/{third['id']}/token", headers=term.tokens["ann"])
    assert refused.status_code == 403 and refused.json()["error"] == "NoTokensLeft"
    assert "the next comes on 2026-12-08 00:00:00" in refused.json()["detail"], refused.json()
    listing = term.client.get(f"/api/v1/courses/{COURSE}/exercises", headers=term.tokens["ann"]).json()
    assert [(x["feedback_policy"], x["tokens_left"]) for x in listing["exercises"]] == [("tokens:2", 0)]
    # bob's tokens are his own
    bobs = _submit(term, "bob", RELEASE + 3 * HOUR)
    assert term.client.post(f"/api/v1/submissions/{bobs['id']}/token", headers=term.tokens["bob"]).status_code == 200
    # a new day in the course's zone (midnight in Paris is 23:00 UTC): two new tokens
    term.clock.now = RELEASE.replace(hour=22, minute=59, second=59)
    assert term.client.post(f"/api/v1/submissions/{third['id']}/token", headers=term.tokens["ann"]).status_code == 403
    term.clock.now = RELEASE.replace(hour=23)
    again = term.client.post(f"/api/v1/submissions/{third['id']}/token", headers=term.tokens["ann"])
    assert again.status_code == 200 and again.json()["tokens_left"] == 1
    _assert_report(term.client.get(f"/api/v1/submissions/{first['id']}", headers=term.tokens["ann"]).json())
    # the instructor reads every one in full
    _assert_full(term.client.get(f"/api/v1/submissions/{second['id']}", headers=term.instructor).json())


def test_publishing_refuses_a_bad_policy_in_one_line(term: Term) -> None:
    term.course(COURSE)
    for bad in ("tokens:0", "tokens:101", "tokens:x", "hidden", "FULL", "score:2"):
        answer = term.publish(COURSE, feedback_policy=bad)
        assert answer.status_code == 422 and answer.json()["error"] == "InvalidCourse", (bad, answer.text)
        assert "full, score, hidden-until-due or tokens:N" in answer.json()["detail"]
    undated = term.publish(COURSE, feedback_policy="hidden-until-due")
    assert undated.status_code == 422 and "give a due date" in undated.json()["detail"]


def test_the_policy_spellings_and_the_cut() -> None:
    assert str(FeedbackPolicy.parse("tokens:3")) == "tokens:3"
    assert FeedbackPolicy.parse(" hidden-until-due ").kind is PolicyKind.HIDDEN_UNTIL_DUE
    with pytest.raises(InvalidCourse):
        FeedbackPolicy.parse("tokens:-1")
    judge = "Expected ValueError for mismatched shapes on input x: (2, 3), got TypeError: leak 1.5 [case 1, seed 2]"
    assert cut_raised(judge) == f"Expected ValueError for mismatched shapes on input x: (2, 3), got TypeError {CUT_NOTE}"
    # a type made at run time could carry the inputs in its name
    assert cut_raised("Raised Leak_0_4711: x") == f"Raised an exception {CUT_NOTE}"
    assert quoted_type("ZeroDivisionError") == "ZeroDivisionError" and quoted_type("print") == "an exception"
    assert cut_raised("Wrong loss: expected 1, got 2.") == "Wrong loss: expected 1, got 2."


def test_migration_0015_upgrades_and_downgrades(settings: Settings) -> None:
    """Existing set entries come out ``full`` (nothing changes for them); down and up again."""
    engine = make_engine(settings.DATABASE_URL)
    try:
        command.upgrade(alembic_config(engine), "0010")
        with engine.begin() as connection:
            connection.execute(text("INSERT INTO set_entries (course_id, exercise, penalty_percent, penalty_unit) "
                                    "VALUES (1, 'gae', 0, 'day')"))
        command.upgrade(alembic_config(engine), "0015")
        with engine.connect() as connection:
            assert connection.execute(text("SELECT feedback_policy FROM set_entries")).scalar_one() == "full"
        assert "feedback_tokens" in set(inspect(engine).get_table_names())
        command.downgrade(alembic_config(engine), "0010")
        assert "feedback_tokens" not in set(inspect(engine).get_table_names())
        assert "feedback_policy" not in {c["name"] for c in inspect(engine).get_columns("set_entries")}
        command.upgrade(alembic_config(engine), "head")
    finally:
        engine.dispose()


def test_the_dashboards_token_button_needs_the_pages_form(term: Term) -> None:
    """A token spent from another site (no form token) is refused and costs nothing; someone
    else's submission is the 404 page."""
    _setup(term, "tokens:1")
    done = _submit(term, "ann")
    token = term.tokens["ann"]["Authorization"].removeprefix("Bearer ")
    assert term.client.post("/login", data={"token": token}, follow_redirects=False).status_code == 303
    forged = term.client.post(f"/dashboard/submissions/{done['id']}/token", data={"csrf": "x"},
                              headers={"Origin": "http://testserver"}, follow_redirects=False)
    assert forged.status_code == 403 and "No token spent" in forged.text
    page = term.client.get(f"/dashboard/submissions/{done['id']}")
    assert "1 token left today" in page.text and EXPECTED not in page.text and RAISED not in page.text
    bobs = _submit(term, "bob")
    assert term.client.post(f"/dashboard/submissions/{bobs['id']}/token", data={"csrf": "x"}).status_code == 404


def test_a_held_back_verdict_says_nothing_of_its_regrades() -> None:
    """visible_report on a record as the API builds it: a regrade's note carries the old and new
    scores, so a hidden view drops it; a score view keeps it (scores are what it shows)."""
    from datetime import UTC, datetime

    from server.courses.feedback_policy import Access, View, visible_report
    from server.submissions.schemas import RegradeNote, SubmissionPublic

    note = RegradeNote(regrade=1, applied_at=None, reason="fixed a check", old_verdict="graded", old_score=40.0,
                       old_counted_score=40.0, new_verdict="graded", new_score=60.0, new_counted_score=60.0,
                       old_content_version="a", old_grader_version="b")
    now = datetime(2026, 12, 8, tzinfo=UTC)
    record = SubmissionPublic(
        id=1, exercise="gae", user="ann", status="done", verdict="graded", score=60.0, message="", checks=[],
        stdout="", stderr="", timings={"grade_seconds": 1.0}, peak_memory_bytes=10, cpu_seconds=1.0, created_at=now,
        started_at=now, finished_at=now, queue_position=None, course="rlhf-a", late=False, late_seconds=None,
        penalty_percent=0, counted_score=60.0, regrades=[note])
    hidden = visible_report(record, Access(View.HIDDEN, FeedbackPolicy.parse("hidden-until-due"), DUE))
    assert (hidden.score, hidden.regrades, hidden.timings, hidden.cpu_seconds) == (None, [], {}, None)
    assert "60" not in hidden.model_dump_json(exclude={"created_at", "started_at", "finished_at", "released_at"})
    scored = visible_report(record, Access(View.SCORE, FeedbackPolicy.parse("score")))
    assert scored.regrades == [note] and scored.score == 60


def test_no_learner_view_shows_the_probe_visits_timings_staff_do() -> None:
    """Round 12: the probe visit's duration (set by the file from the hidden probe inputs) and
    diagnosis's are staff-only timings: a learner's ``full`` view drops them, staff see them."""
    from datetime import UTC, datetime

    from server.courses.feedback_policy import EVERYTHING, LEARNER_FULL, STAFF_ONLY_TIMINGS, Access, View, visible_report
    from server.submissions.schemas import SubmissionPublic

    now = datetime(2026, 12, 8, tzinfo=UTC)
    timings = {"grade_seconds": 1.0, "learner_jail": 0.2, "probe_visit": 1.5, "diagnosis": 0.1}
    record = SubmissionPublic(
        id=1, exercise="gae", user="ann", status="done", verdict="graded", score=60.0, message="", checks=[],
        stdout="", stderr="", timings=timings, peak_memory_bytes=10, cpu_seconds=1.0, created_at=now,
        started_at=now, finished_at=now, queue_position=None, course="rlhf-a", late=False, late_seconds=None,
        penalty_percent=0, counted_score=60.0, regrades=[])
    assert STAFF_ONLY_TIMINGS == {"probe_visit", "diagnosis"}
    assert visible_report(record, EVERYTHING).timings == timings
    assert visible_report(record, LEARNER_FULL).timings == {"grade_seconds": 1.0, "learner_jail": 0.2}
    assert visible_report(record, LEARNER_FULL).stdout == record.stdout  # the rest of full stays
    for view in (View.REPORT, View.SCORE, View.HIDDEN):
        assert visible_report(record, Access(view, FeedbackPolicy.parse("score"))).timings == {}


def test_a_hidden_exercise_in_one_course_shows_its_score_in_another(term: Term) -> None:
    """Issue 33, item 3: the same exercise in two courses, hidden-until-due in A, full in B. Before
    A's due date ann's course-B page and scores show her B score; her course-A page holds it back."""
    _setup(term, "hidden-until-due")  # COURSE (rlhf-a), ann and bob enrolled
    term.course("rlhf-b")
    term.enroll("rlhf-b", "ann")
    assert term.publish("rlhf-b", release_at=RELEASE, due_at=DUE, feedback_policy="full").status_code == 200
    _submit(term, "ann")
    in_b = term.submit_at(RELEASE + 2 * HOUR, "ann", course="rlhf-b")
    assert in_b["feedback_view"] == "full" and in_b["score"] == 60
    term.clock.now = DUE - HOUR  # A's due date not passed yet

    token = term.tokens["ann"]["Authorization"].split()[1]
    term.client.cookies.clear()
    login = term.client.post("/login", data={"token": token}, headers={"Origin": "http://testserver"},
                             follow_redirects=False)
    assert login.status_code in (302, 303), login.text

    def row(course: str) -> str:
        html = term.client.get(f"/dashboard/learners/ann?course={course}").text
        start = html.index('<tr data-exercise="actor-loss"')
        return html[start:html.index("</tr>", start)]

    assert "hidden until due" not in row("rlhf-b") and ">60<" in row("rlhf-b")
    assert "hidden until due" in row(COURSE)
    scores = term.client.get("/api/v1/courses/rlhf-b/scores", headers=term.tokens["ann"]).json()["scores"]
    mine = next(s for s in scores if s["exercise"] == "actor-loss")
    assert mine["described"] != "hidden until due" and mine["counted_score"] == 60, mine
    held = term.client.get(f"/api/v1/courses/{COURSE}/scores", headers=term.tokens["ann"]).json()["scores"]
    held_back = next(s for s in held if s["exercise"] == "actor-loss")
    assert held_back["described"] == held_back["shown"] == "hidden until due"  # and the old name, deprecated


@pytest.mark.parametrize("policy", ["tokens:2", "hidden-until-due", "score"])
def test_the_learner_page_costs_the_same_queries_for_one_submission_or_twelve(term: Term, policy: str) -> None:
    """Issue 33, item 3: the learner page's queries do not grow with its rows (the policy is
    read once per exercise, the rows and their tokens in one query each)."""
    _setup(term, policy)
    token = term.tokens["ann"]["Authorization"].split()[1]
    term.client.cookies.clear()
    term.client.post("/login", data={"token": token}, headers={"Origin": "http://testserver"}, follow_redirects=False)
    statements: list[str] = []
    background = ("verdict-listener", "lti-grades", "similarity", "grader-", "regrade-poll")  # the app's own threads

    def seen(*args: Any) -> None:
        if not threading.current_thread().name.startswith(background):
            statements.append(args[2])

    event.listen(term.api.state.engine, "before_cursor_execute", seen)

    def queries_after(submissions: int) -> int:
        while term.client.get("/api/v1/submissions", headers=term.tokens["ann"]).json().__len__() < submissions:
            _submit(term, "ann", RELEASE + HOUR)
        statements.clear()
        page = term.client.get(f"/dashboard/learners/ann?course={COURSE}")
        assert page.status_code == 200 and page.text.count("/dashboard/submissions/") >= submissions
        return len(statements)

    assert queries_after(1) == queries_after(12)
