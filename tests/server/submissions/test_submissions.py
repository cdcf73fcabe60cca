"""Creating, reading and listing submissions (grading itself is in test_worker.py)."""

from __future__ import annotations

from sqlalchemy import func, select

from exercises.registry import get_exercise
from exercises.versions import content_version, grader_version
from server.models import Role, Submission
from tests.server.conftest import Api, StartApi
from tests.server.fakes import FakeGrader


def _count_rows(api: Api) -> int:
    with api.state.session_factory() as session:
        return session.scalar(select(func.count()).select_from(Submission)) or 0


def test_create_answers_202_and_is_graded(api: Api, grader: FakeGrader) -> None:
    headers = api.user("alice")
    response = api.submit(headers, source="x = 1\n")
    assert response.status_code == 202
    created = response.json()
    assert created["exercise"] == "actor-loss"
    assert created["user"] == "alice"
    assert created["status"] in {"queued", "running", "done"}
    assert "source" not in created

    done = api.wait_done(headers, created["id"])
    assert done["verdict"] == "graded"
    assert done["score"] == 75.0
    assert grader.calls == [("actor-loss", "x = 1\n", created["id"])]


def test_a_leading_byte_order_mark_is_dropped_before_the_source_is_stored_and_graded(
    api: Api, grader: FakeGrader
) -> None:
    headers = api.user("alice")
    created = api.submit(headers, source="\ufeffx = 1\n").json()
    api.wait_done(headers, created["id"])
    assert grader.calls == [("actor-loss", "x = 1\n", created["id"])]
    with api.state.session_factory() as session:
        row = session.get(Submission, created["id"])
        assert row is not None and row.source == "x = 1\n"
    assert api.submit(headers, source="\ufeff").json()["error"] == "EmptySource"  # a mark alone is no source


def test_source_over_the_limit_is_413(api: Api) -> None:
    headers = api.user("alice")
    limit = api.state.settings.MAX_SOURCE_BYTES
    response = api.submit(headers, source="#" * (limit + 1))
    assert response.status_code == 413
    body = response.json()
    assert body["error"] == "SourceTooLarge"
    assert str(limit) in body["detail"]
    assert api.submit(headers, source="#" * limit).status_code == 202


def test_huge_raw_body_is_refused_before_parsing(api: Api) -> None:
    headers = api.user("alice")
    body = b'{"exercise": "actor-loss", "source": "' + b"a" * (50 * 1024 * 1024) + b'"}'
    response = api.client.post(
        "/api/v1/submissions", content=body, headers={**headers, "Content-Type": "application/json"}
    )
    assert response.status_code == 413
    assert response.json()["error"] == "SourceTooLarge"

    def chunks():  # no Content-Length: refused while streaming
        yield b'{"exercise": "actor-loss", "source": "'
        for _ in range(100):
            yield b"a" * (1024 * 1024)
        yield b'"}'

    response = api.client.post("/api/v1/submissions", content=chunks(), headers=headers)
    assert response.status_code == 413
    assert _count_rows(api) == 0


def test_source_validation_errors(api: Api) -> None:
    headers = api.user("alice")
    cases = [
        ("   \n\t ", "actor-loss", 422, "EmptySource"),
        ("", "actor-loss", 422, "EmptySource"),
        ("x = 1\x00", "actor-loss", 422, "InvalidSource"),
        ("x = 1", "no-such-exercise", 404, "ExerciseNotFound"),
    ]
    for source, exercise, status, error in cases:
        response = api.client.post(
            "/api/v1/submissions", json={"exercise": exercise, "source": source}, headers=headers
        )
        assert response.status_code == status, (source, response.text)
        assert response.json()["error"] == error
    # A lone surrogate is valid JSON but not UTF-8 text.
    response = api.client.post(
        "/api/v1/submissions",
        content=b'{"exercise": "actor-loss", "source": "x = \\ud800"}',
        headers={**headers, "Content-Type": "application/json"},
    )
    assert response.status_code == 422
    assert _count_rows(api) == 0


def test_sources_that_are_not_python_text_are_refused_with_a_message(api: Api) -> None:
    """Python source cannot contain NUL, and PostgreSQL text cannot store it: such a source
    is refused at the API with a message the learner can act on, never stored."""
    headers = {**api.user("alice"), "Content-Type": "application/json"}
    bodies = [
        rb'{"exercise": "actor-loss", "source": "def f():\n    return 1\u0000\n"}',  # JSON escape
        b'{"exercise": "actor-loss", "source": "x = 1 \xff\xfe"}',  # not UTF-8 at all
    ]
    nul, not_utf8 = (api.client.post("/api/v1/submissions", content=body, headers=headers) for body in bodies)
    assert nul.status_code == 422 and nul.json()["error"] == "InvalidSource"
    assert "NUL" in nul.json()["detail"]
    assert not_utf8.status_code == 422 and not_utf8.json()["error"] == "InvalidSource"
    assert "UTF-8" in not_utf8.json()["detail"]
    assert _count_rows(api) == 0


def test_idempotency_key_returns_the_first_submission(api: Api) -> None:
    headers = {**api.user("alice"), "Idempotency-Key": "k-123"}
    first = api.submit(headers)
    second = api.submit(headers)
    assert first.status_code == 202
    assert second.status_code == 200
    assert second.json()["id"] == first.json()["id"]
    assert _count_rows(api) == 1

    # The same key from another user is a different submission.
    other = api.submit({**api.user("bob"), "Idempotency-Key": "k-123"})
    assert other.status_code == 202
    assert other.json()["id"] != first.json()["id"]

    # The same key with a different body is a client bug, not a silent replay.
    conflict = api.submit(headers, source="y = 2\n")
    assert conflict.status_code == 409
    assert conflict.json()["error"] == "IdempotencyKeyConflict"
    assert _count_rows(api) == 2


def test_learner_cannot_see_another_learners_submission(api: Api) -> None:
    alice, bob = api.user("alice"), api.user("bob")
    submission_id = api.submit(alice).json()["id"]

    response = api.client.get(f"/api/v1/submissions/{submission_id}", headers=bob)
    assert response.status_code == 404
    assert response.json()["error"] == "SubmissionNotFound"
    # Indistinguishable from an id that does not exist.
    missing = api.client.get("/api/v1/submissions/999999", headers=bob)
    assert missing.status_code == 404
    assert missing.json()["error"] == "SubmissionNotFound"

    assert api.client.get(f"/api/v1/submissions/{submission_id}", headers=alice).status_code == 200
    teacher = api.user("teacher", Role.INSTRUCTOR)
    assert api.client.get(f"/api/v1/submissions/{submission_id}", headers=teacher).json()["user"] == "alice"


def test_submission_public_shape(api: Api) -> None:
    headers = api.user("alice")
    done = api.wait_done(headers, api.submit(headers).json()["id"])
    assert set(done) == {
        "id", "exercise", "user", "status", "verdict", "score", "message", "checks", "stdout",
        "stderr", "timings", "peak_memory_bytes", "cpu_seconds", "created_at", "started_at",
        "finished_at", "queue_position", "estimated_seconds", "filename", "feedback",
        "course", "late", "late_seconds", "penalty_percent", "counted_score",
        "content_version", "grader_version", "regrades",
        "feedback_view", "feedback_policy", "released_at", "token_spent", "tokens_left",
    }
    # The versions of what graded it (exercises/versions.py), never "unknown" for a new verdict.
    assert (done["content_version"], done["grader_version"]) == (
        content_version(get_exercise("actor-loss")), grader_version())
    assert done["regrades"] == []
    assert (done["course"], done["late"], done["counted_score"]) == ("default", False, done["score"])
    assert (done["feedback_view"], done["feedback_policy"], done["tokens_left"]) == ("full", "full", None)
    assert done["checks"][2] == {
        "name": "clip", "weight": 25.0, "passed": False,
        "message": "clip boundary wrong", "mistake_title": "max instead of min",
        "check_id": "actor-loss/clip", "mistake_id": "actor-loss/max-for-min",
        "misconception": "max instead of min",  # mistake_title's old name, deprecated, for one release
    }
    assert done["queue_position"] is None and done["estimated_seconds"] is None
    assert done["peak_memory_bytes"] == 12345
    assert done["timings"]["jail_start"] == 0.01
    assert done["timings"]["grade_seconds"] >= 0
    assert done["created_at"].endswith(("Z", "+00:00"))


def test_queue_position_counts_queued_submissions_ahead(start_api: StartApi) -> None:
    grader = FakeGrader(gated=True)  # the single worker blocks on the first submission
    api = start_api(grader_factory=grader.factory)
    headers = api.user("alice")
    first = api.submit(headers).json()["id"]
    assert grader.started.wait(10)
    second = api.submit(headers).json()
    third = api.submit(headers).json()
    assert second["queue_position"] == 0
    assert third["queue_position"] == 1
    assert api.client.get(f"/api/v1/submissions/{first}", headers=headers).json()["queue_position"] is None
    health = api.client.get("/api/v1/health").json()
    assert health["queue"] == {"queued": 2, "running": 1}
    grader.gate.set()
    for submission_id in (first, second["id"], third["id"]):
        assert api.wait_done(headers, submission_id)["verdict"] == "graded"


def test_list_own_submissions_newest_first(api: Api) -> None:
    alice, bob = api.user("alice"), api.user("bob")
    ids = [api.submit(alice, source=f"x = {i}\n").json()["id"] for i in range(3)]
    api.submit(bob)

    listed = api.client.get("/api/v1/submissions", headers=alice).json()
    assert [s["id"] for s in listed] == ids[::-1]
    assert all("source" not in s and "checks" not in s for s in listed)
    page = api.client.get("/api/v1/submissions?limit=1&offset=1", headers=alice).json()
    assert [s["id"] for s in page] == [ids[1]]
    assert api.client.get("/api/v1/submissions?exercise=other", headers=alice).json() == []

    refused = api.client.get("/api/v1/submissions?user=bob", headers=alice)
    assert refused.status_code == 403
    assert refused.json()["error"] == "NotAllowed"

    teacher = api.user("teacher", Role.INSTRUCTOR)
    assert api.client.get("/api/v1/submissions", headers=teacher).json() == []
    as_teacher = api.client.get("/api/v1/submissions?user=alice", headers=teacher).json()
    assert [s["id"] for s in as_teacher] == ids[::-1]
