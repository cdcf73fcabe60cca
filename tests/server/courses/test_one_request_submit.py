"""Issue 38, one request per submit: ``POST /submissions?wait=`` answers with the verdict,
``late=ask`` answers 409 ``LateNotConfirmed`` with the window (nothing stored), ``catalogue=``
checks the version ``GET /exercises`` sent as its ``ETag``; a client that sends none of them
gets what it always got."""

from __future__ import annotations

from typing import Any

from server.db import transaction
from server.models import Submission
from tests.server.courses.conftest import CLOSE, DUE, HOUR, RELEASE, Term


def _stored(term: Term) -> int:
    with transaction(term.api.state.session_factory) as session:
        return session.query(Submission).count()


def _late_course(term: Term) -> None:
    term.course("fall")
    term.enroll("fall", "lena")
    answer = term.publish("fall", release_at=RELEASE, due_at=DUE, close_at=CLOSE, penalty_percent=10)
    assert answer.status_code == 200, answer.text


def _post(term: Term, query: str = "", **body: Any) -> Any:
    payload = {"exercise": "actor-loss", "source": "x = 1\n", **body}
    return term.client.post(f"/api/v1/submissions{query}", json=payload, headers=term.tokens["lena"])


def test_a_post_with_wait_answers_with_the_verdict(term: Term) -> None:
    _late_course(term)
    term.clock.now = DUE - HOUR
    answer = _post(term, "?wait=10")
    assert answer.status_code == 202, answer.text
    body = answer.json()
    assert (body["status"], body["verdict"], body["score"], body["late"]) == ("done", "graded", 75, False)
    without = _post(term)  # no wait: the row as stored, as before
    assert without.status_code == 202 and without.json()["status"] in ("queued", "running", "done")


def test_late_ask_refuses_with_the_window_and_stores_nothing(term: Term) -> None:
    _late_course(term)
    term.clock.now = DUE + HOUR
    refused = _post(term, "?late=ask&wait=10", course="fall")
    assert refused.status_code == 409, refused.text
    body = refused.json()
    assert body["error"] == "LateNotConfirmed" and body["course"] == "fall"
    window = body["window"]
    assert (window["exercise"], window["status"], window["seconds_to_due"], window["penalty_percent"]) == (
        "actor-loss", "late", -3600, 10.0)
    assert window["due_at"].startswith("2026-12-11T17:00:00") and window["close_at"].startswith("2026-12-13T17:00")
    # the same window as the course listing shows (what ppo-submit read before)
    listing = term.client.get("/api/v1/courses/fall/exercises", headers=term.tokens["lena"]).json()
    assert listing["exercises"][0] == window
    assert _stored(term) == 0
    sent = _post(term, "?late=send&wait=10", course="fall")
    assert sent.status_code == 202 and sent.json()["late"] is True and sent.json()["status"] == "done"
    old_client = _post(term, course="fall")  # sends no `late`: accepted late, as before
    assert old_client.status_code == 202 and old_client.json()["late"] is True
    assert _stored(term) == 2


def test_late_ask_on_time_is_sent_at_once(term: Term) -> None:
    _late_course(term)
    term.clock.now = DUE - HOUR
    answer = _post(term, "?late=ask&wait=10")
    assert answer.status_code == 202 and answer.json()["late"] is False


def test_late_ask_after_the_close_is_the_refusal_it_always_was(term: Term) -> None:
    _late_course(term)
    term.clock.now = CLOSE + HOUR
    answer = _post(term, "?late=ask")
    assert answer.status_code == 403 and answer.json()["error"] == "SubmissionsClosed"


def test_the_catalogue_has_a_version_and_a_stale_one_stores_nothing(term: Term) -> None:
    _late_course(term)
    term.clock.now = RELEASE - HOUR  # nothing released to lena yet
    before = term.client.get("/api/v1/exercises", headers=term.tokens["lena"])
    assert before.status_code == 200 and before.json() == []
    etag = before.headers["ETag"]
    same = term.client.get("/api/v1/exercises", headers={**term.tokens["lena"], "If-None-Match": etag})
    assert same.status_code == 304 and same.headers["ETag"] == etag and same.content == b""
    term.clock.now = DUE - HOUR  # released: the catalogue is another now
    after = term.client.get("/api/v1/exercises", headers={**term.tokens["lena"], "If-None-Match": etag})
    assert after.status_code == 200 and [e["slug"] for e in after.json()] == ["actor-loss"]
    assert after.headers["ETag"] != etag
    stale = _post(term, f"?catalogue={etag.strip(chr(34))}")
    assert stale.status_code == 409 and stale.json()["error"] == "CatalogueChanged"
    assert _stored(term) == 0
    current = _post(term, f"?catalogue={after.headers['ETag']}")
    assert current.status_code == 202, current.text
    assert _stored(term) == 1


def test_bad_parameters_are_422(term: Term) -> None:
    _late_course(term)
    term.clock.now = DUE - HOUR
    for query in ("?late=maybe", "?wait=31", "?wait=-1", "?catalogue=" + "v" * 65):
        assert _post(term, query).status_code == 422, query
    assert _stored(term) == 0
