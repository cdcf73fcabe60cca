"""Real PostgreSQL, real procrastinate, real worker processes (``ppo-grader worker``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import func, select, text

from server.config import Settings
from server.db import SessionFactory, make_engine, make_session_factory, transaction
from server.grading.procrastinate_backend import TASK_NAME as GRADE_TASK
from server.grading.procrastinate_backend import ProcrastinateQueue
from server.migrations import upgrade_to_head
from server.models import CheckResult, Role, Submission
from server.submissions.schemas import SubmissionCreate
from server.submissions.service import create_submission
from server.users.service import create_user
from tests.pg import pg_database, pg_url  # noqa: F401
from tests.scaleout.commands import WORKER_COMMAND

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

BIN = Path(sys.executable).parent
REFERENCE = (Path(__file__).resolve().parents[2] / "exercises" / "actor_loss" / "reference.py").read_text()


def command(argv: list[str]) -> list[str]:
    """Run the installed ``ppo-grader`` of this venv (the same entry point as the image)."""
    exe = BIN / argv[0]
    return [str(exe), *argv[1:]] if exe.exists() else [sys.executable, "-m", "server.cli", *argv[1:]]


@dataclass
class Cluster:
    """A migrated PostgreSQL database, a way to submit, and worker processes."""

    settings: Settings
    env: dict[str, str]
    sessions: SessionFactory
    workers: list[subprocess.Popen[bytes]]
    log_dir: Path
    user_id: int

    def submit(self, source: str = REFERENCE, exercise: str = "actor-loss") -> int:
        """Store a submission and defer its job in one transaction (the API's code path)."""
        queue = ProcrastinateQueue(self.settings)
        with self.sessions() as session:
            user = session.get(__import__("server.models", fromlist=["User"]).User, self.user_id)
            row, _ = create_submission(
                session, queue, user, SubmissionCreate(exercise=exercise, source=source),
                max_source_bytes=self.settings.MAX_SOURCE_BYTES, idempotency_key=None, max_queued=None,
            )
            return row.id

    def start_worker(self, **extra_env: str) -> subprocess.Popen[bytes]:
        index = len(self.workers)
        log = open(self.log_dir / f"worker-{index}.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(command(WORKER_COMMAND), env={**self.env, **extra_env}, stdout=log, stderr=log)
        self.workers.append(proc)
        return proc

    def row(self, submission_id: int) -> Submission:
        with self.sessions() as session:
            row = session.get(Submission, submission_id)
            assert row is not None
            return row

    def check_count(self, submission_id: int) -> int:
        with self.sessions() as session:
            return session.scalar(select(func.count()).select_from(CheckResult).where(CheckResult.submission_id == submission_id)) or 0

    def wait(self, predicate: Callable[[], bool], timeout: float = 120, what: str = "condition") -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.1)
        logs = "\n".join(p.read_text()[-3000:] for p in sorted(self.log_dir.glob("*.log")))
        raise AssertionError(f"timed out waiting for {what}\n{logs}")

    def job_statuses(self) -> list[str]:
        """The grading jobs' statuses, in order. The similarity due-date sweep is a periodic
        task on the same queue, so a worker also writes its rows: they are not grading jobs."""
        with self.sessions() as session:
            return list(session.scalars(
                text("SELECT status::text FROM procrastinate_jobs WHERE task_name = :task ORDER BY id"),
                {"task": GRADE_TASK},
            ))


@pytest.fixture
def cluster(pg_url: str, tmp_path: Path) -> Iterator[Cluster]:
    env = {
        **os.environ,
        "PPO_GRADER_DATABASE_URL": pg_url,
        "PPO_GRADER_QUEUE": "procrastinate",
        # Fast failure detection for the tests (production: 10 s / 30 s / 10 s).
        "PPO_GRADER_WORKER_HEARTBEAT_SECONDS": "0.5",
        "PPO_GRADER_WORKER_STALLED_SECONDS": "3",
        "PPO_GRADER_WORKER_REAPER_SECONDS": "0.5",
    }
    for key in ("PPO_GRADER_TEST_CRASH_ON", "PPO_GRADER_TEST_HOLD_ON"):
        env.pop(key, None)
    settings = Settings(DATABASE_URL=pg_url, QUEUE="procrastinate")
    engine = make_engine(pg_url)
    upgrade_to_head(engine)
    sessions = make_session_factory(engine)
    with transaction(sessions) as session:
        user_id = create_user(session, "learner", Role.LEARNER, settings.secret_bytes).user.id
    cluster = Cluster(settings, env, sessions, [], tmp_path, user_id)
    try:
        yield cluster
    finally:
        for proc in cluster.workers:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait(10)
        engine.dispose()
