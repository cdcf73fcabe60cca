"""Long polls woken by PostgreSQL's LISTEN/NOTIFY: a verdict stored by another process (a
``ppo-grader worker``) wakes the waiting request at once, and the waiting request does not
re-read its row meanwhile. SQLite, or ``LISTEN_NOTIFY=false``, keeps polling."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event, text

from server.config import Settings
from server.db import make_engine, make_session_factory, transaction
from server.grading.persistence import claim_job, store_internal_error
from server.submissions.waiting import CHANNEL, POLL_SECONDS, RECHECK_SECONDS, VerdictAnnouncer, VerdictListener
from tests.server.conftest import Api, StartApi

#: How long the "other process" takes to store the verdict while the request waits.
DELAY = 1.0


def _store_elsewhere(url: str, submission_id: int) -> None:
    """What a worker in another process does: claim the row and store a verdict, on an engine
    of its own (the API's in-process announcer never hears of it)."""
    engine = make_engine(url)
    try:
        sessions = make_session_factory(engine)
        with transaction(sessions) as session:
            claimed = claim_job(session, submission_id)
            assert claimed is not None
        with transaction(sessions) as session:
            store_internal_error(session, submission_id, attempt=claimed.attempts)
    finally:
        engine.dispose()


def _count_reads(api: Api) -> list[str]:
    """Every statement the API's engine sends that reads the submissions table."""
    reads: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "FROM submissions" in statement:
            reads.append(statement)

    event.listen(api.state.engine, "before_cursor_execute", seen)
    return reads


def _long_poll_while_stored_elsewhere(api: Api, url: str) -> tuple[dict[str, Any], float, int]:
    """(the answer, seconds from the verdict's commit to the answer, rows read meanwhile)."""
    learner = api.user("ada")
    sid = api.submit(learner).json()["id"]
    reads = _count_reads(api)
    stored_at: list[float] = []

    def later() -> None:
        time.sleep(DELAY)
        _store_elsewhere(url, sid)
        stored_at.append(time.monotonic())

    worker = threading.Thread(target=later)
    worker.start()
    body = api.client.get(f"/api/v1/submissions/{sid}?wait=20", headers=learner).json()
    answered = time.monotonic()
    worker.join()
    return body, answered - stored_at[0], len(reads)


def _wait_pushed(api: Api, pushed: bool = True) -> None:
    deadline = time.monotonic() + 10
    while api.state.announcer.pushed is not pushed:
        assert time.monotonic() < deadline, f"the listener never became pushed={pushed}"
        time.sleep(0.02)


@pytest.fixture
def remote_settings(pg_url: str) -> Settings:
    """The API of a scale-out deployment: PostgreSQL, workers in other processes (none here)."""
    return Settings(DATABASE_URL=pg_url, QUEUE="procrastinate")


@pytest.mark.postgres
def test_a_verdict_from_another_process_wakes_the_long_poll_without_polling(
        start_api: StartApi, remote_settings: Settings) -> None:
    api = start_api(remote_settings)
    _wait_pushed(api)
    body, late, reads = _long_poll_while_stored_elsewhere(api, remote_settings.DATABASE_URL)
    assert body["status"] == "done" and body["verdict"] == "internal_error"
    # Woken by the NOTIFY, not by the 20 s limit (the margin is wide for a loaded machine: the
    # counted reads below are what tells NOTIFY from polling).
    assert late < 5
    # Before the wait one read of the row, its queue position and the queue's rate (the estimate),
    # and one after the wake-up (polling would make DELAY / 50 ms = 20 rounds of them).
    assert reads <= 4, reads
    assert api.state.announcer.waiting() == 0


@pytest.mark.postgres
def test_without_listen_notify_the_long_poll_polls(start_api: StartApi, remote_settings: Settings) -> None:
    api = start_api(remote_settings.model_copy(update={"LISTEN_NOTIFY": False}))
    assert api.state.listener is None
    body, late, reads = _long_poll_while_stored_elsewhere(api, remote_settings.DATABASE_URL)
    assert body["status"] == "done"
    assert late < 5  # found by polling, long before the 20 s limit
    assert reads >= DELAY / POLL_SECONDS / 2, reads  # about one read per POLL_SECONDS


@pytest.mark.postgres
def test_the_listener_reconnects_and_wakes_waiters_again(start_api: StartApi, remote_settings: Settings) -> None:
    """A lost listening connection sends waiters back to polling; once connected again, a
    verdict from elsewhere wakes them by NOTIFY as before."""
    api = start_api(remote_settings)
    _wait_pushed(api)
    engine = make_engine(remote_settings.DATABASE_URL)
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                              "WHERE datname = current_database() AND query = :listen"),
                         {"listen": f"LISTEN {CHANNEL}"})
            conn.commit()
    finally:
        engine.dispose()
    _wait_pushed(api, False)
    _wait_pushed(api, True)
    body, late, reads = _long_poll_while_stored_elsewhere(api, remote_settings.DATABASE_URL)
    assert body["status"] == "done" and late < 5 and reads <= 4, (late, reads)


@pytest.mark.postgres
def test_a_rolled_back_verdict_or_a_stray_notify_wakes_nobody(pg_url: str) -> None:
    """NOTIFY is sent at commit only; a payload that is not an id is dropped, and the listener
    keeps listening."""
    from server.grading.procrastinate_backend import conninfo

    announcer = VerdictAnnouncer()
    listener = VerdictListener(conninfo(pg_url), announcer)
    listener.start()
    engine = make_engine(pg_url)

    async def scenario() -> list[bool]:
        deadline = time.monotonic() + 10
        while not announcer.pushed:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
        woken = []
        with announcer.subscribe(7) as sub:
            with engine.connect() as conn:
                conn.execute(text("SELECT pg_notify(:c, '7')"), {"c": CHANNEL})
                conn.rollback()
                conn.execute(text("SELECT pg_notify(:c, 'not an id'), pg_notify(:c, '-7')"), {"c": CHANNEL})
                conn.commit()
            woken.append(await sub.wait(0.5))
            with engine.connect() as conn:
                conn.execute(text("SELECT pg_notify(:c, '7')"), {"c": CHANNEL})
                conn.commit()
            woken.append(await sub.wait(5))
        return woken

    try:
        assert asyncio.run(scenario()) == [False, True]
    finally:
        listener.stop()
        engine.dispose()


def test_an_announcement_between_the_read_and_the_wait_is_not_lost() -> None:
    announcer = VerdictAnnouncer()
    announcer.set_pushed(True)

    async def scenario() -> bool:
        with announcer.subscribe(3) as sub:
            announcer.announce(3)  # the verdict lands after our read, before we wait
            return await sub.wait(5)

    assert asyncio.run(scenario())  # woken by the announcement (a timeout answers False)
    assert announcer.waiting() == 0


def test_a_pushed_wait_sleeps_until_woken_and_an_unpushed_one_polls() -> None:
    announcer = VerdictAnnouncer()

    async def wait_once(timeout: float) -> float:
        with announcer.subscribe(1) as sub:
            t0 = time.monotonic()
            await sub.wait(timeout)
            return time.monotonic() - t0

    assert asyncio.run(wait_once(2)) < 1.5  # not pushed: back after POLL_SECONDS to re-read
    announcer.set_pushed(True)
    assert asyncio.run(wait_once(0.6)) >= 0.55  # pushed: no re-read before the time is up
    local = VerdictAnnouncer(local=True)  # in-process workers announce: a slow re-check only

    async def wait_local(timeout: float) -> float:
        with local.subscribe(1) as sub:
            t0 = time.monotonic()
            await sub.wait(timeout)
            return time.monotonic() - t0

    assert asyncio.run(wait_local(0.6)) >= 0.55  # not every POLL_SECONDS
    assert asyncio.run(wait_local(5)) < RECHECK_SECONDS + 3.0  # but within RECHECK_SECONDS, not 5 s


def test_a_listener_state_change_wakes_every_waiter() -> None:
    announcer = VerdictAnnouncer()
    announcer.set_pushed(True)

    async def scenario() -> list[bool]:
        async def one(sid: int) -> bool:
            with announcer.subscribe(sid) as sub:
                return await sub.wait(5)

        tasks = [asyncio.create_task(one(sid)) for sid in (1, 2, 2)]
        await asyncio.sleep(0.1)
        announcer.set_pushed(False)  # the connection was lost: everyone re-reads, then polls
        return list(await asyncio.gather(*tasks))

    assert asyncio.run(scenario()) == [True, True, True]


@pytest.fixture(autouse=True)
def _no_leak() -> Iterator[None]:
    yield
    assert not [t for t in threading.enumerate() if t.name == "verdict-listener" and t.is_alive()]
