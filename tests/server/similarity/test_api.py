"""Similarity through the API with the fake grader: who may see it, the background run, the
ranking, the review marks, and the run a passed due date requests by itself."""

from __future__ import annotations

import time
from typing import Any

import pytest

from server.config import Settings
from server.models import Role
from tests.server.courses.conftest import DUE, HOUR, RELEASE, Term
from tests.server.similarity.conftest import corpus


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Sweep for due dates every 0.2 s, so the test need not wait 30."""
    return settings.model_copy(update={"SIMILARITY_POLL_SECONDS": 0.2})


def submit(term: Term, name: str, source: str, exercise: str = "kl-penalty", course: str = "rlhf-a") -> None:
    answer = term.client.post("/api/v1/submissions", json={"exercise": exercise, "source": source, "course": course},
                              headers=term.tokens[name])
    assert answer.status_code == 202, answer.text
    term.api.wait_done(term.tokens[name], answer.json()["id"])


def wait_run(term: Term, course: str = "rlhf-a", timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = term.client.get(f"/api/v1/courses/{course}/similarity", headers=term.instructor).json()
        if body["latest"] and body["latest"]["status"] in ("done", "failed"):
            return body
        time.sleep(0.05)
    raise AssertionError(f"no finished run: {body}")


def small_course(term: Term) -> dict[str, str]:
    files = corpus()
    names = ["l01", "l02", "l03", "l04", "l05", "l07", "l28", "l29"]
    term.course("rlhf-a")
    term.enroll("rlhf-a", *names)
    assert term.publish("rlhf-a", "kl-penalty", release_at=RELEASE, due_at=DUE).status_code == 200
    term.clock.now = RELEASE + HOUR
    for name in names:
        submit(term, name, files[name])
    return files


def test_instructors_request_a_run_and_read_ranked_pairs(term: Term) -> None:
    small_course(term)
    empty = term.client.get("/api/v1/courses/rlhf-a/similarity", headers=term.instructor).json()
    assert empty["latest"] is None and empty["pairs"] == []
    assert empty["time_zone"] == "Europe/Paris"  # what `ppo-grader --server ... similarity` dates the run in

    answer = term.client.post("/api/v1/courses/rlhf-a/similarity", headers=term.instructor)
    assert answer.status_code == 202 and answer.json()["status"] in ("queued", "running", "done")
    body = wait_run(term)
    assert body["latest"]["status"] == "done", body["latest"]["message"]
    assert body["pairs_run"]["learners"] == 8 and body["pairs_run"]["exercises"] == ["kl-penalty"]
    assert body["shown"] == body["pairs_run"]  # the old name, deprecated, for one release
    top = [(p["learner_a"], p["learner_b"]) for p in body["pairs"][:2]]
    assert set(top) == {("l03", "l28"), ("l07", "l29")}
    assert body["pairs"][0]["exercises"][0]["similarity"] == 1.0 and body["pairs"][0]["review"] is None

    detail = term.client.get("/api/v1/courses/rlhf-a/similarity/l29/l07", headers=term.instructor).json()
    assert (detail["pair"]["learner_a"], detail["pair"]["learner_b"]) == ("l07", "l29")
    side = detail["side_by_side"][0]
    assert "SUPPORTED" in side["source_a"] and "ALLOWED_KINDS" in side["source_b"]
    assert side["spans_a"] and side["spans_b"] and all(first <= last for first, last in side["spans_a"])

    marked = term.client.put("/api/v1/courses/rlhf-a/similarity/l28/l03/review", json={"mark": "concern"}, headers=term.instructor)
    assert marked.status_code == 200 and marked.json()["mark"] == "concern"
    again = term.client.put("/api/v1/courses/rlhf-a/similarity/l03/l28/review", json={"mark": "fine"}, headers=term.instructor)
    assert again.json()["mark"] == "fine"
    pairs = term.client.get("/api/v1/courses/rlhf-a/similarity", headers=term.instructor).json()["pairs"]
    assert {(p["learner_a"], p["review"]) for p in pairs if p["learner_b"] == "l28"} == {("l03", "fine")}
    bad = term.client.put("/api/v1/courses/rlhf-a/similarity/l03/l28/review", json={"mark": "guilty"}, headers=term.instructor)
    assert bad.status_code == 422

    by_exercise = term.client.get("/api/v1/courses/rlhf-a/similarity?exercise=kl-penalty&limit=1", headers=term.instructor).json()
    assert len(by_exercise["pairs"]) == 1 and by_exercise["pairs"][0]["exercises"][0]["similarity"] == 1.0
    unknown = term.client.get("/api/v1/courses/rlhf-a/similarity?exercise=gae", headers=term.instructor)
    assert (unknown.status_code, unknown.json()["error"]) == (422, "InvalidCourse")


def test_scores_are_untouched_and_learners_see_nothing(term: Term) -> None:
    small_course(term)
    before = term.client.get("/api/v1/gradebook.csv?course=rlhf-a", headers=term.instructor).text
    term.client.post("/api/v1/courses/rlhf-a/similarity", headers=term.instructor)
    wait_run(term)
    assert term.client.get("/api/v1/gradebook.csv?course=rlhf-a", headers=term.instructor).text == before
    learner = term.tokens["l28"]
    for method, path in (("post", ""), ("get", ""), ("get", "/l03/l28"), ("put", "/l03/l28/review")):
        answer = term.client.request(method.upper(), f"/api/v1/courses/rlhf-a/similarity{path}", headers=learner,
                                     json={"mark": "fine"} if method == "put" else None)
        assert answer.status_code == 403, (method, path, answer.text)
    outsider = term.user("other-prof", Role.INSTRUCTOR)
    assert term.client.get("/api/v1/courses/rlhf-a/similarity", headers=outsider).status_code == 404
    assert term.client.get("/api/v1/courses/rlhf-a/similarity/l03/nobody", headers=term.instructor).status_code == 404
    mine = term.client.get("/api/v1/submissions?course=rlhf-a", headers=learner).text
    assert "similar" not in mine.lower()


def test_a_passed_due_date_requests_a_run_by_itself(term: Term) -> None:
    small_course(term)
    time.sleep(0.5)  # several sweeps before the due date: nothing is requested
    assert term.client.get("/api/v1/courses/rlhf-a/similarity", headers=term.instructor).json()["latest"] is None
    term.clock.now = DUE + HOUR
    body = wait_run(term)
    assert body["latest"]["reason"] == "due" and body["latest"]["status"] == "done"
    assert body["pairs"] and body["pairs"][0]["score"] == 1.0, body
    first = body["latest"]["id"]
    time.sleep(0.5)  # the due date is settled: no second run
    assert term.client.get("/api/v1/courses/rlhf-a/similarity", headers=term.instructor).json()["latest"]["id"] == first
    # An extension's later due date settles that learner's work: one more run after it.
    answer = term.client.put("/api/v1/courses/rlhf-a/extensions/l28/kl-penalty", json={"due_at": (DUE + 3 * HOUR).isoformat()},
                             headers=term.instructor)
    assert answer.status_code == 200, answer.text
    time.sleep(0.5)
    assert term.client.get("/api/v1/courses/rlhf-a/similarity", headers=term.instructor).json()["latest"]["id"] == first
    term.clock.now = DUE + 4 * HOUR
    deadline = time.monotonic() + 30
    while (latest := term.client.get("/api/v1/courses/rlhf-a/similarity", headers=term.instructor).json()["latest"])["id"] == first:
        assert time.monotonic() < deadline, latest
        time.sleep(0.1)
    assert latest["reason"] == "due"


def test_hostile_sources_do_not_fail_a_run(term: Term) -> None:
    term.course("rlhf-a")
    term.enroll("rlhf-a", "ann", "bob", "cid")
    term.publish("rlhf-a", "kl-penalty")
    huge = "x = (" * 6000 + "\n" + "y = 1\n" * 4000
    for name, source in (("ann", huge), ("bob", "def f(:\n  '''\n"), ("cid", "\ufeff\t\x0c" + "é" * 20000)):
        submit(term, name, source)
    term.client.post("/api/v1/courses/rlhf-a/similarity", headers=term.instructor)
    body = wait_run(term)
    assert body["latest"]["status"] == "done", body["latest"]["message"]


def test_the_newest_run_when_done_is_the_one_whose_pairs_are_shown(term: Term) -> None:
    """``newest_runs`` reads the newest run first: a run finishing between two reads can no
    longer make a report say "done" beside no pairs (on PostgreSQL each read sees new commits)."""
    from server.db import transaction
    from server.models import Course, RunStatus, SimilarityRun
    from server.similarity.service import newest_runs

    term.course("rlhf-a")
    with transaction(term.api.state.session_factory) as session:
        course = session.query(Course).filter_by(slug="rlhf-a").one()
        assert newest_runs(session, course) == (None, None)
        older = SimilarityRun(course_id=course.id, status=RunStatus.DONE)
        newer = SimilarityRun(course_id=course.id, status=RunStatus.RUNNING)
        session.add_all([older, newer])
        session.flush()
        assert newest_runs(session, course) == (newer, older)
        newer.status = RunStatus.DONE
        session.flush()
        assert newest_runs(session, course) == (newer, newer)
