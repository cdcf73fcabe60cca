"""The feedback data over HTTP: stored with the verdict (migration 0005), served by
``GET /submissions/{id}``, in the submitted file's name; did-you-mean on unknown slugs."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.app import real_grader
from tests.server.conftest import Api, StartApi

SOURCES = Path(__file__).resolve().parents[2] / "exercises" / "feedback" / "sources"


@pytest.mark.slow
def test_a_typo_is_stored_and_served_as_one_root_cause_in_the_learners_file(start_api: StartApi) -> None:
    api = start_api(grader_factory=real_grader)
    headers = api.user("alice")
    body = {"exercise": "gae", "source": (SOURCES / "typo.py").read_text(), "filename": "/home/alice/rl/typo.py"}
    created = api.client.post("/api/v1/submissions", json=body, headers=headers).json()
    done = api.wait_done(headers, created["id"], timeout=240)
    assert done["filename"] == "typo.py"
    (cause,) = done["feedback"]["root_causes"]
    assert (cause["exception"], cause["location"]["file"], cause["location"]["line"]) == ("NameError", "typo.py", 11)
    assert cause["headline"] == "Your function raised NameError on every call (11 checks)"
    assert len(cause["checks"]) == 11
    assert 'File "typo.py", line 11' in cause["traceback"]
    assert all("submission.py" not in check["message"] for check in done["checks"])
    summary = done["feedback"]["summary"]
    assert (summary["checks_passed"], summary["checks_total"]) == (0, 12)  # shape points need right values


def test_without_feedback_data_the_field_is_null(api: Api) -> None:
    headers = api.user("alice")
    done = api.wait_done(headers, api.submit(headers, filename="mine.py").json()["id"])
    assert done["feedback"] is None  # the fake grader's report carries none
    assert done["filename"] == "mine.py"


def test_an_unknown_slug_gets_a_suggestion(api: Api) -> None:
    headers = api.user("alice")
    answer = api.client.get("/api/v1/exercises/gea", headers=headers)
    assert answer.status_code == 404
    assert "did you mean gae?" in answer.json()["detail"]
    posted = api.client.post("/api/v1/submissions", json={"exercise": "actor-los", "source": "x = 1\n"},
                             headers=headers)
    assert posted.status_code == 404 and "did you mean actor-loss?" in posted.json()["detail"]
    far = api.client.get("/api/v1/exercises/zzzzzz", headers=headers).json()["detail"]
    assert "did you mean" not in far


def test_the_openapi_schema_describes_the_feedback(api: Api) -> None:
    schema = api.client.get("/api/v1/openapi.json").json()
    schemas = schema["components"]["schemas"]
    assert {"Feedback", "RootCause", "Location", "FeedbackSummary", "Mistake"} <= set(schemas)
    assert "feedback" in schemas["SubmissionPublic"]["properties"]
    create = schema["paths"]["/api/v1/submissions"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert "filename" in create["properties"]
