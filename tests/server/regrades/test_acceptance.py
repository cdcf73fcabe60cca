"""Issue 24's acceptance, end to end with the real judge and jail: on SQLite with the
in-process queue, and on PostgreSQL with real ``ppo-grader worker`` processes (procrastinate).
50 real submissions graded under a wrong reference; the reference fixed and the service
restarted; the preview names exactly the changed ones; apply moves boards and gradebook;
a cancelled set changes nothing (tests/server/regrades/scenario.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner, Result

from server.app import create_app
from server.cli import app as cli_app
from server.config import Settings
from server.db import make_engine, make_session_factory, transaction
from server.grading.procrastinate_backend import ProcrastinateQueue
from server.migrations import upgrade_to_head
from server.models import Role, User
from server.submissions.schemas import SubmissionCreate
from server.submissions.service import create_submission
from server.users.service import create_user
from tests.server.regrades.catalogue import SLUG, write_wrong_copy, wrong_reference
from tests.server.regrades.conftest import Cli
from tests.server.regrades.scenario import LEARNERS, Handed, all_done, check_preview_apply_cancel, plan, sources, wait

pytestmark = pytest.mark.slow


def _tokens(settings: Settings) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    engine = make_engine(settings.DATABASE_URL)
    upgrade_to_head(engine)
    with transaction(make_session_factory(engine)) as session:
        prof = create_user(session, "prof", Role.INSTRUCTOR, settings.secret_bytes).token
        learners = {n: create_user(session, n, Role.LEARNER, settings.secret_bytes).token for n in LEARNERS}
    engine.dispose()
    return {"Authorization": f"Bearer {prof}"}, {n: {"Authorization": f"Bearer {t}"} for n, t in learners.items()}


def _cli(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> Cli:
    """``ppo-grader ARGS...`` in this process, on ``settings``' database and queue."""
    monkeypatch.setenv("PPO_GRADER_DATABASE_URL", settings.DATABASE_URL)
    monkeypatch.setenv("PPO_GRADER_QUEUE", settings.QUEUE)

    def run(*args: str) -> Result:
        return CliRunner().invoke(cli_app, list(args))

    return run


def test_sqlite_inprocess_regrade_after_a_fixed_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(DATABASE_URL=f"sqlite:///{tmp_path / 'grader.db'}", WORKERS=2, REGRADE_POLL_SECONDS=0.3,
                        RATE_LIMIT="1000/minute")
    cli = _cli(monkeypatch, settings)
    prof, learners = _tokens(settings)
    files, handed = sources(), Handed()
    with wrong_reference(tmp_path), TestClient(create_app(settings)) as client:
        for index, name in enumerate(LEARNERS):
            for kind in plan(index):
                answer = client.post("/api/v1/submissions", json={"exercise": SLUG, "source": files[kind]}, headers=learners[name])
                assert answer.status_code == 202, answer.text
                handed.files[answer.json()["id"]] = (name, kind)
        sessions = client.app.state.grader.session_factory  # type: ignore[attr-defined]
        wait(lambda: all_done(sessions), 900, "50 submissions graded")
    # The reference is fixed and the service restarted with it.
    with TestClient(create_app(settings)) as client:
        sessions = client.app.state.grader.session_factory  # type: ignore[attr-defined]
        check_preview_apply_cancel(client, prof, learners["l00"], sessions, handed, cli)


@pytest.mark.postgres
def test_postgres_procrastinate_regrade_after_a_fixed_reference(pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(DATABASE_URL=pg_url, QUEUE="procrastinate")
    prof, learners = _tokens(settings)
    engine = make_engine(pg_url)
    sessions = make_session_factory(engine)
    env = {**os.environ, "PPO_GRADER_DATABASE_URL": pg_url, "PPO_GRADER_QUEUE": "procrastinate",
           "PPO_GRADER_WORKER_HEARTBEAT_SECONDS": "0.5", "PPO_GRADER_WORKER_STALLED_SECONDS": "3"}
    worker_command = [sys.executable, "-m", "tests.server.regrades.catalogue", "worker", "--queue", "cpu", "--concurrency", "2"]

    def start_worker(log: str, **extra: str) -> subprocess.Popen[bytes]:
        out = open(tmp_path / log, "wb")
        return subprocess.Popen(worker_command, env={**env, **extra}, stdout=out, stderr=out)

    files, handed = sources(), Handed()
    copy = write_wrong_copy(tmp_path)
    worker = start_worker("worker-wrong.log", PPO_GRADER_TEST_EXERCISE_COPY=str(copy))
    try:
        queue = ProcrastinateQueue(settings)
        for index, name in enumerate(LEARNERS):
            for kind in plan(index):
                with sessions() as session:
                    user = session.query(User).filter_by(name=name).one()
                    row, _ = create_submission(session, queue, user, SubmissionCreate(exercise=SLUG, source=files[kind]),
                                               max_source_bytes=settings.MAX_SOURCE_BYTES, idempotency_key=None, max_queued=None)
                    handed.files[row.id] = (name, kind)
        wait(lambda: all_done(sessions), 900, "50 submissions graded by the worker")
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(60)
    # The fix is deployed: workers restart on the fixed catalogue (this process has it already).
    worker = start_worker("worker-fixed.log")
    cli = _cli(monkeypatch, settings)
    try:
        with TestClient(create_app(settings)) as client:
            check_preview_apply_cancel(client, prof, learners["l00"], sessions, handed, cli)
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
        engine.dispose()
