"""procrastinate on the real PostgreSQL: enqueue in the submission's transaction, claim,
racing workers, SIGKILL mid-job, poison job, SIGTERM. Worker processes are the real
``ppo-grader worker`` with the real judge and jail."""

from __future__ import annotations

import signal

import pytest
from sqlalchemy import func, select, text

from server.grading.persistence import MAX_ATTEMPTS
from server.grading.procrastinate_backend import ProcrastinateQueue
from server.models import Submission, User
from tests.scaleout.conftest import REFERENCE, Cluster

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def test_job_commits_and_rolls_back_with_the_submission(cluster: Cluster) -> None:
    queue = ProcrastinateQueue(cluster.settings)
    with cluster.sessions() as session:
        user = session.get(User, cluster.user_id)
        session.add(Submission(user_id=user.id, exercise="actor-loss", source="x", source_sha256="0" * 64))
        session.flush()
        row = session.scalars(select(Submission)).one()
        queue.defer(session, row)
        session.rollback()  # a crash before the commit: neither row exists
    with cluster.sessions() as session:
        assert session.scalar(select(func.count()).select_from(Submission)) == 0
        assert session.scalar(text("SELECT count(*) FROM procrastinate_jobs")) == 0
    submission_id = cluster.submit()
    with cluster.sessions() as session:
        jobs = session.execute(text("SELECT queue_name, task_name, args, status::text FROM procrastinate_jobs")).all()
        assert [tuple(j) for j in jobs] == [("cpu", "ppo_grader.grade", {"submission_id": submission_id}, "todo")]
        assert ProcrastinateQueue(cluster.settings).depth(session) == {"cpu": 1, "gpu": 0}


def test_worker_claims_and_grades(cluster: Cluster) -> None:
    submission_id = cluster.submit()
    cluster.start_worker()
    cluster.wait(lambda: cluster.row(submission_id).status == "done", what="the job to be graded")
    row = cluster.row(submission_id)
    assert (row.verdict, row.score, row.attempts) == ("graded", 100.0, 1)
    assert cluster.check_count(submission_id) > 0
    # procrastinate marks the job finished in its own transaction, just after the verdict
    cluster.wait(lambda: cluster.job_statuses() == ["succeeded"], what="the job to be marked succeeded")


def test_two_workers_racing_grade_each_submission_once(cluster: Cluster) -> None:
    ids = [cluster.submit() for _ in range(30)]
    cluster.start_worker()
    cluster.start_worker()
    cluster.wait(lambda: all(cluster.row(i).status == "done" for i in ids), timeout=180, what="30 jobs")
    rows = [cluster.row(i) for i in ids]
    assert {(r.verdict, r.score, r.attempts) for r in rows} == {("graded", 100.0, 1)}
    counts = {cluster.check_count(i) for i in ids}
    assert len(counts) == 1 and counts.pop() > 0  # one set of check results each, no duplicates
    # procrastinate marks the job finished in its own transaction, just after the verdict
    cluster.wait(lambda: cluster.job_statuses() == ["succeeded"] * 30, what="every job to be marked succeeded")
    logs = [p.read_text() for p in sorted(cluster.log_dir.glob("worker-*.log"))]
    assert sum(log.count('"msg": "graded"') for log in logs) == 30


def test_worker_sigkilled_mid_job_is_retried_by_another_and_ends_with_one_result(cluster: Cluster) -> None:
    submission_id = cluster.submit(REFERENCE + "\n# hold-me\n")
    first = cluster.start_worker(PPO_GRADER_TEST_HOLD_ON="hold-me", PPO_GRADER_TEST_HOLD_SECONDS="120")
    cluster.wait(lambda: cluster.row(submission_id).status == "running", what="the first worker to claim")
    second = cluster.start_worker()  # idle: the only job is in the first worker's hands
    first.send_signal(signal.SIGKILL)
    assert first.wait(10) == -signal.SIGKILL
    cluster.wait(lambda: cluster.row(submission_id).status == "done", what="the retried job to finish")
    row = cluster.row(submission_id)
    assert (row.verdict, row.score, row.attempts) == ("graded", 100.0, 2)
    assert cluster.check_count(submission_id) > 0
    # procrastinate marks the job finished in its own transaction, just after the verdict
    cluster.wait(lambda: cluster.job_statuses() == ["succeeded"], what="the job to be marked succeeded")
    assert second.poll() is None


def test_poison_job_ends_as_internal_error_after_bounded_tries(cluster: Cluster) -> None:
    poison = cluster.submit(REFERENCE + "\n# poison\n")
    crashy = {"PPO_GRADER_TEST_CRASH_ON": "poison"}
    procs = [cluster.start_worker(**crashy), cluster.start_worker(**crashy)]
    starts = 2
    def settled() -> bool:
        nonlocal starts
        for index, proc in enumerate(procs):
            if proc.poll() is not None:  # a supervisor (compose: restart: unless-stopped) restarts it
                assert starts < 2 * (MAX_ATTEMPTS + 2), "the poison job was retried without bound"
                procs[index] = cluster.start_worker(**crashy)
                starts += 1
        return cluster.row(poison).status == "done"
    cluster.wait(settled, timeout=240, what="the poison job to be given up")
    row = cluster.row(poison)
    assert (row.status, row.verdict, row.attempts) == ("done", "internal_error", MAX_ATTEMPTS + 1)
    assert "not your fault" in row.message
    # The workers still serve: an ordinary submission is graded next.
    ok = cluster.submit()
    cluster.wait(lambda: cluster.row(ok).status == "done", what="a normal job after the poison one")
    assert cluster.row(ok).verdict == "graded"


def test_sigterm_finishes_the_job_in_hand(cluster: Cluster) -> None:
    submission_id = cluster.submit(REFERENCE + "\n# slow\n")
    worker = cluster.start_worker(PPO_GRADER_TEST_HOLD_ON="slow", PPO_GRADER_TEST_HOLD_SECONDS="3")
    cluster.wait(lambda: cluster.row(submission_id).status == "running", what="the claim")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(60) == 0
    row = cluster.row(submission_id)
    assert (row.status, row.verdict, row.attempts) == ("done", "graded", 1)
    # procrastinate marks the job finished in its own transaction, just after the verdict
    cluster.wait(lambda: cluster.job_statuses() == ["succeeded"], what="the job to be marked succeeded")
