"""The worker pool: claiming, storing, failures, and recovery after a crash."""

from __future__ import annotations

from sqlalchemy import select

from server.config import Settings
from server.db import make_engine, make_session_factory, transaction
from server.grading.persistence import MAX_ATTEMPTS, claim
from server.grading.queue import InProcessQueue
from server.grading.worker import WorkerPool
from server.migrations import upgrade_to_head
from server.models import CheckResult, Role, Status, Submission
from server.users.service import create_user
from tests.server.conftest import Api, StartApi
from tests.server.fakes import FakeGrader, FakeReport


def test_worker_stores_verdict_checks_and_measurements(api: Api) -> None:
    headers = api.user("alice")
    done = api.wait_done(headers, api.submit(headers).json()["id"])
    with api.state.session_factory() as session:
        row = session.get(Submission, done["id"])
        assert row is not None
        assert (row.status, row.verdict, row.score, row.attempts) == ("done", "graded", 75.0, 1)
        assert row.started_at is not None and row.finished_at is not None
        assert row.finished_at >= row.started_at >= row.created_at
        assert row.stdout == "hello from learner\n"
        assert row.cpu_seconds == 0.5
        checks = session.scalars(
            select(CheckResult).where(CheckResult.submission_id == row.id).order_by(CheckResult.position)
        ).all()
        assert [(c.name, c.passed, c.position) for c in checks] == [
            ("value", True, 0),
            ("gradient", True, 1),
            ("clip", False, 2),
        ]


def test_grader_exception_is_an_internal_error_not_the_learners_fault(start_api: StartApi) -> None:
    api = start_api(grader_factory=FakeGrader(fail=True).factory)
    headers = api.user("alice")
    done = api.wait_done(headers, api.submit(headers).json()["id"])
    assert done["verdict"] == "internal_error"
    assert done["score"] is None
    assert "not your fault" in done["message"]
    assert "does not count" in done["message"]
    assert done["checks"] == []


def test_verdict_outside_the_closed_list_is_an_internal_error(start_api: StartApi) -> None:
    api = start_api(grader_factory=FakeGrader(FakeReport(verdict="banana")).factory)
    headers = api.user("alice")
    assert api.wait_done(headers, api.submit(headers).json()["id"])["verdict"] == "internal_error"


def test_stored_output_is_capped(start_api: StartApi, settings: Settings) -> None:
    capped = settings.model_copy(update={"OUTPUT_BYTES": 100})
    api = start_api(settings=capped, grader_factory=FakeGrader(FakeReport(stdout="é" * 1000)).factory)
    headers = api.user("alice")
    stdout = api.wait_done(headers, api.submit(headers).json()["id"])["stdout"]
    kept = stdout.rsplit(" [... ", 1)[0]
    assert kept == "é" * len(kept) and len(kept) > 30  # never half a character
    assert stdout == kept + f" [... {1000 - len(kept)} characters cut]" and len(stdout.encode()) <= 100


def test_claim_is_a_compare_and_set(settings: Settings) -> None:
    engine = make_engine(settings.DATABASE_URL)
    upgrade_to_head(engine)
    factory = make_session_factory(engine)
    with transaction(factory) as session:
        user = create_user(session, "alice", Role.LEARNER, b"pepper").user
        row = Submission(user_id=user.id, exercise="actor-loss", source="x", source_sha256="0" * 64)
        session.add(row)
        session.flush()
        submission_id = row.id
    with transaction(factory) as session:
        first = claim(session, submission_id)
    with transaction(factory) as session:
        second = claim(session, submission_id)
    assert first is not None and first.attempts == 1 and first.source == "x"
    assert second is None
    engine.dispose()


def _seed_unfinished(settings: Settings) -> dict[str, int]:
    """Rows as a crashed server would leave them: one running (attempted once), one queued."""
    engine = make_engine(settings.DATABASE_URL)
    upgrade_to_head(engine)
    factory = make_session_factory(engine)
    ids = {}
    with transaction(factory) as session:
        user = create_user(session, "alice", Role.LEARNER, settings.secret_bytes).user
        for status, attempts in ((Status.RUNNING, 1), (Status.QUEUED, 0), (Status.DONE, 1)):
            row = Submission(
                user_id=user.id,
                exercise="actor-loss",
                source=f"# {status}\n",
                source_sha256="0" * 64,
                status=status.value,
                attempts=attempts,
            )
            session.add(row)
            session.flush()
            ids[status.value] = row.id
    engine.dispose()
    return ids


def test_restart_regrades_rows_left_running_or_queued(start_api: StartApi, settings: Settings) -> None:
    ids = _seed_unfinished(settings)
    grader = FakeGrader()
    api = start_api(grader_factory=grader.factory)
    headers = api.user("teacher", Role.INSTRUCTOR)
    running = api.wait_done(headers, ids["running"])
    queued = api.wait_done(headers, ids["queued"])
    assert running["verdict"] == queued["verdict"] == "graded"
    assert sorted(call[2] for call in grader.calls) == [ids["running"], ids["queued"]]
    with api.state.session_factory() as session:
        assert session.get(Submission, ids["running"]).attempts == 2  # type: ignore[union-attr]
        assert session.get(Submission, ids["queued"]).attempts == 1  # type: ignore[union-attr]
        assert session.get(Submission, ids["done"]).verdict is None  # type: ignore[union-attr]


def test_shutdown_mid_grading_puts_the_row_back_in_the_queue_uncounted(start_api: StartApi, settings: Settings) -> None:
    """Issue 38: the stop gives up on the job in hand (the judge is closed under it next); its
    row goes back to ``queued`` with the attempt not counted, and the next start grades it."""
    engine = make_engine(settings.DATABASE_URL)
    upgrade_to_head(engine)
    factory = make_session_factory(engine)
    with transaction(factory) as session:
        user = create_user(session, "alice", Role.LEARNER, b"p").user
        row = Submission(user_id=user.id, exercise="actor-loss", source="x", source_sha256="0" * 64)
        session.add(row)
        session.flush()
        submission_id = row.id

    grader = FakeGrader(gated=True, fail=True)  # closing the judge makes the call raise
    queue = InProcessQueue()
    pool = WorkerPool(factory, queue, grader, workers=1, output_cap=1000)
    assert pool.recover() == [submission_id]
    pool.start()
    assert grader.started.wait(10)
    pool.stop(timeout=0)  # as the lifespan does, before closing the judge
    with factory() as session:
        stored = session.get(Submission, submission_id)
        assert stored is not None and (stored.status, stored.attempts, stored.verdict) == ("queued", 0, None)
    grader.close()  # the call raises in the worker now: nothing is stored for it
    for thread in pool._threads:
        thread.join(10)
    assert pool.alive == 0
    with factory() as session:
        stored = session.get(Submission, submission_id)
        assert stored is not None and (stored.status, stored.attempts, stored.verdict) == ("queued", 0, None)
    assert WorkerPool(factory, InProcessQueue(), grader, workers=1, output_cap=1000).recover() == [submission_id]
    engine.dispose()


def test_a_job_graded_after_the_stop_gave_up_on_it_is_not_stored(start_api: StartApi, settings: Settings) -> None:
    """A job that ends (here with a report, as a killed jail's internal_error would) after the
    stop stopped waiting for it stores nothing: its row is back in the queue."""
    engine = make_engine(settings.DATABASE_URL)
    upgrade_to_head(engine)
    factory = make_session_factory(engine)
    with transaction(factory) as session:
        user = create_user(session, "alice", Role.LEARNER, b"p").user
        row = Submission(user_id=user.id, exercise="actor-loss", source="x", source_sha256="0" * 64)
        session.add(row)
        session.flush()
        submission_id = row.id
    grader = FakeGrader(gated=True)
    pool = WorkerPool(factory, InProcessQueue(), grader, workers=1, output_cap=1000)
    pool.recover()
    pool.start()
    assert grader.started.wait(10)
    pool.stop(timeout=0)
    grader.close()  # the gate opens: the grade returns a report
    for thread in pool._threads:
        thread.join(10)
    with factory() as session:
        stored = session.get(Submission, submission_id)
        assert stored is not None and (stored.status, stored.verdict, len(stored.checks)) == ("queued", None, 0)
    engine.dispose()


def test_a_submission_that_keeps_killing_workers_is_given_up(start_api: StartApi, settings: Settings) -> None:
    ids = _seed_unfinished(settings)
    engine = make_engine(settings.DATABASE_URL)
    with engine.begin() as connection:
        connection.exec_driver_sql(f"UPDATE submissions SET attempts = {MAX_ATTEMPTS} WHERE id = {ids['running']}")
    engine.dispose()
    grader = FakeGrader()
    api = start_api(grader_factory=grader.factory)
    headers = api.user("teacher", Role.INSTRUCTOR)
    assert api.wait_done(headers, ids["running"])["verdict"] == "internal_error"
    assert api.wait_done(headers, ids["queued"])["verdict"] == "graded"
    assert [call[2] for call in grader.calls] == [ids["queued"]]
