"""Similarity on the scale-out queue: the run's job is written in the run's transaction, below
every grading job's priority, and a real ``ppo-grader worker`` grades first, then compares."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from server.app import create_app
from server.db import transaction
from server.models import Course, Role, SimilarityRun, User
from server.similarity.jobs import PRIORITY, ProcrastinateSimilarity
from server.similarity.service import request_run
from server.submissions.schemas import SubmissionCreate
from server.submissions.service import create_submission
from server.users.service import create_user
from tests.scaleout.conftest import Cluster, cluster  # noqa: F401  (fixture)
from tests.server.similarity.conftest import corpus

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def test_run_job_commits_with_the_run_and_a_worker_computes_it_after_grading(cluster: Cluster) -> None:  # noqa: F811
    with cluster.sessions() as session:
        course = session.get(Course, 1)
        request_run(session, course, defer=ProcrastinateSimilarity().defer)  # type: ignore[arg-type]
        session.rollback()  # a crash before the commit: neither the run nor its job exists
    with cluster.sessions() as session:
        assert session.scalar(text("SELECT count(*) FROM similarity_runs")) == 0
        assert session.scalar(text("SELECT count(*) FROM procrastinate_jobs")) == 0

    files = corpus()
    ids = []
    with transaction(cluster.sessions) as session:
        prof = create_user(session, "prof", Role.INSTRUCTOR, cluster.settings.secret_bytes).token
        learners = {name: create_user(session, name, Role.LEARNER, cluster.settings.secret_bytes).user.id for name in ("l03", "l28", "l05")}
    from server.grading.procrastinate_backend import ProcrastinateQueue

    for name, user_id in learners.items():
        with cluster.sessions() as session:
            row, _ = create_submission(
                session, ProcrastinateQueue(cluster.settings), session.get(User, user_id),  # type: ignore[arg-type]
                SubmissionCreate(exercise="kl-penalty", source=files[name]),
                max_source_bytes=cluster.settings.MAX_SOURCE_BYTES, idempotency_key=None, max_queued=None,
            )
            ids.append(row.id)
    with TestClient(create_app(cluster.settings)) as client:
        answer = client.post("/api/v1/courses/default/similarity", headers={"Authorization": f"Bearer {prof}"})
        assert answer.status_code == 202, answer.text
        run_id = answer.json()["id"]
    with cluster.sessions() as session:
        jobs = session.execute(text("SELECT task_name, priority, args FROM procrastinate_jobs ORDER BY id")).all()
    assert [tuple(j) for j in jobs][-1] == ("ppo_grader.similarity", PRIORITY, {"run_id": run_id})
    assert all(priority == 0 for task, priority, _ in jobs if task == "ppo_grader.grade")

    cluster.start_worker()

    def run() -> SimilarityRun:
        with cluster.sessions() as session:
            found = session.get(SimilarityRun, run_id)
            assert found is not None
            return found

    cluster.wait(lambda: run().status in ("done", "failed"), timeout=240, what="the similarity run")
    assert run().status == "done", run().message
    # Grading jobs (priority 0) were all taken before the comparison (priority -10).
    assert all(cluster.row(i).status == "done" and cluster.row(i).finished_at <= run().started_at for i in ids)
    assert run().summary["learners"] == 3
    with cluster.sessions() as session:
        top = session.execute(text("SELECT learner_a_id, learner_b_id, score FROM similarity_pairs WHERE run_id = :r ORDER BY score DESC"), {"r": run_id}).first()
    assert top is not None and (top[0], top[1]) == (learners["l03"], learners["l28"]) and top[2] == 1.0
