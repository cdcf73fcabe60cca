"""/metrics (Prometheus text) and JSON log lines carrying the submission id."""

from __future__ import annotations

import json
import logging

from fastapi.testclient import TestClient
from pydantic import SecretStr

from server.config import Settings
from server.logging_setup import JsonFormatter, SubmissionIdFilter, submission_context
from tests.server.conftest import (  # noqa: F401
    Api,
    StartApi,
    api,
    db_backend,
    grader,
    pytest_generate_tests,
    settings,
    start_api,
)
from tests.pg import pg_database, pg_url  # noqa: F401

METRICS_TOKEN = "metrics-token-for-the-scraper"


def test_metrics_report_queue_workers_and_latency_histograms(start_api: StartApi, settings: Settings) -> None:
    api = start_api(settings.model_copy(update={"METRICS_TOKEN": SecretStr(METRICS_TOKEN)}))
    headers = api.user("alice")
    api.wait_done(headers, api.submit(headers).json()["id"])
    response = api.client.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    body = response.text
    assert 'ppo_grader_queue_depth{queue="inprocess"} 0.0' in body
    assert "ppo_grader_jobs_running 0.0" in body
    assert "ppo_grader_workers 1.0" in body
    assert 'ppo_grader_grading_seconds_count{exercise="actor-loss",verdict="graded"} 1.0' in body
    assert 'ppo_grader_submit_to_verdict_seconds_bucket{exercise="actor-loss",le="+Inf",verdict="graded"} 1.0' in body
    assert 'ppo_grader_process_graded_total{exercise="actor-loss",verdict="graded"}' in body


def test_metrics_want_the_token_or_a_loopback_client(start_api: StartApi, settings: Settings) -> None:
    api = start_api(settings.model_copy(update={"METRICS_TOKEN": SecretStr(METRICS_TOKEN)}))
    learner = api.user("bob")
    for headers in ({}, learner, {"Authorization": f"Bearer {METRICS_TOKEN}x"}, {"Authorization": METRICS_TOKEN}):
        response = api.client.get("/metrics", headers=headers)
        assert response.status_code == 401, response.text
        assert response.json()["error"] == "NotAuthenticated" and "ppo_grader" not in response.text
    # No token configured: only loopback clients (the test client is not one).
    open_api = start_api()
    response = open_api.client.get("/metrics")
    assert response.status_code == 403 and "loopback" in response.json()["detail"]
    local = TestClient(open_api.client.app, client=("127.0.0.1", 5000))
    assert local.get("/metrics").status_code == 200


def test_every_line_of_a_job_carries_the_submission_id() -> None:
    record = logging.LogRecord("server.grading.worker", logging.INFO, __file__, 1, "graded", (), None)
    record.verdict = "graded"
    handler_filter = SubmissionIdFilter()
    with submission_context(42):
        handler_filter.filter(record)
    line = json.loads(JsonFormatter().format(record))
    assert (line["submission_id"], line["msg"], line["verdict"], line["level"]) == (42, "graded", "graded", "info")
    outside = logging.LogRecord("x", logging.INFO, __file__, 1, "idle", (), None)
    handler_filter.filter(outside)
    assert json.loads(JsonFormatter().format(outside))["submission_id"] is None
