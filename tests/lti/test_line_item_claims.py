"""A line item's creation is claimed on its row (``lti_line_items.claimed_at``, compared and
set), on SQLite and on PostgreSQL: two jobs that create the same exercise's column at once,
against the independent platform (``tests/lti/platform``) and with the race forced (both have
looked the column up at the LMS, found none, and are about to claim it), make exactly one
column at the LMS; a stale claim is taken over, a live one waits. And migration 0026 turns the
old ``claimed:<iso time>`` text into the column, both ways."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from alembic import command
from sqlalchemy import Engine, event, select, text
from sqlalchemy.orm import Session

from server.app import create_app
from server.config import Settings
from server.db import SessionFactory, make_engine, transaction
from server.lti import keys, lineitems
from server.lti.errors import LmsUnreachable
from server.lti.lineitems import CLAIM_EXPIRY, ColumnWaiting, line_item_url
from server.lti.platforms import Registration, add_platform
from server.lti.services import LmsClient
from server.migrations import alembic_config
from server.models import LtiContext, LtiLineItem, LtiPlatform, utcnow
from tests.lti.conftest import SECRET, STAFF
from tests.lti.servers import Platform, free_port, launch, lti_continue, make_certificate, platform_process, tls_server
from tests.pg import pg_database, pg_url  # noqa: F401  (fixtures)
from tests.server.conftest import (  # noqa: F401  (fixtures)
    db_backend,
    pytest_generate_tests,
    settings,
)

EXERCISE = "actor-loss"
PEOPLE = {"prof": {"sub": "c-prof", "login": "prof", "name": "Barbara Liskov", "roles": {"C1": [STAFF]}}}


@dataclass
class Linked:
    """A tool on the test's database, linked to a course of the platform (its AGS service)."""

    platform: Platform
    engine: Engine
    sessions: SessionFactory
    link: LtiContext
    registered: LtiPlatform

    def columns(self) -> list[dict[str, Any]]:
        """The platform's line items for the exercise (what its gradebook shows)."""
        return [i for i in self.platform.state()["line_items"] if i.get("resourceId") == EXERCISE]

    def client(self) -> LmsClient:
        return LmsClient(self.sessions, SECRET.encode(), self.registered)

    def row(self) -> tuple[str | None, Any]:
        with self.sessions() as session:
            found = session.execute(
                select(LtiLineItem.url, LtiLineItem.claimed_at).where(LtiLineItem.context_id == self.link.id)
            ).one()
        return found[0], found[1]


@pytest.fixture
def linked(settings: Settings, tmp_path: Path) -> Iterator[Linked]:  # noqa: F811
    settings = Settings(DATABASE_URL=settings.DATABASE_URL, WORKERS=1, SECRET_KEY=SECRET)  # type: ignore[arg-type]
    cert, key = make_certificate(tmp_path)
    port = free_port()
    app = create_app(settings)
    with (
        platform_process(f"https://localhost:{port}", cert, tmp_path / "platform.log") as platform,
        tls_server(app, port, cert, key) as url,
    ):
        sessions: SessionFactory = app.state.grader.session_factory
        with transaction(sessions) as session:
            reg = platform.registration()
            add_platform(session, Registration(**{**reg, "deployment_ids": tuple(reg["deployment_ids"])}))
            keys.signing_key(session, SECRET.encode())  # the tool's key, before two jobs sign with it
        platform.people(PEOPLE, {"C1": {"title": "Claims", "label": "CLAIMS-1"}})
        with httpx.Client(verify=str(cert), follow_redirects=True, timeout=60) as browser:
            assert lti_continue(browser, url, launch(browser, platform, user="prof", context="C1")).status_code == 200
        with sessions() as session:
            link = session.scalar(select(LtiContext))
            registered = session.scalar(select(LtiPlatform))
            assert link is not None and link.lineitems_url and registered is not None
            session.expunge_all()
        yield Linked(platform, app.state.grader.engine, sessions, link, registered)


def test_two_jobs_creating_one_column_at_once_make_one_at_the_lms(linked: Linked) -> None:
    """Both jobs look the column up at the LMS (none), then both claim it at the same moment
    (held at their claim's INSERT until both are there): one claims and creates, the other
    reads the winner's URL. The platform's gradebook has one column."""
    racers: set[int] = set()
    both_looked = threading.Barrier(2, timeout=30)

    def hold(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        me = threading.get_ident()
        if me in racers and statement.lstrip().upper().startswith("INSERT INTO LTI_LINE_ITEMS"):
            racers.discard(me)  # its claim only (the winner's recording inserts again)
            both_looked.wait()

    got: dict[int, str] = {}
    failed: list[BaseException] = []

    def job(n: int) -> None:
        racers.add(threading.get_ident())
        try:
            with linked.client() as client:
                got[n] = line_item_url(linked.sessions, client, linked.link, EXERCISE, "Actor loss")
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            failed.append(exc)

    event.listen(linked.engine, "before_cursor_execute", hold)
    try:
        threads = [threading.Thread(target=job, args=(n,)) for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(90)
    finally:
        event.remove(linked.engine, "before_cursor_execute", hold)
    assert not failed, failed
    assert not both_looked.broken  # both reached the claim: the race happened
    [column] = linked.columns()
    assert got == {0: column["id"], 1: column["id"]}
    assert linked.row() == (column["id"], None)  # the URL recorded, the claim cleared


def test_a_live_claim_waits_and_a_stale_one_is_taken_over(linked: Linked, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lineitems, "_CLAIM_READS", 1)
    with transaction(linked.sessions) as session:  # a job claimed it a moment ago, and is creating it
        session.add(LtiLineItem(context_id=linked.link.id, exercise=EXERCISE, url=None, claimed_at=utcnow()))
    with linked.client() as client, pytest.raises(ColumnWaiting):
        line_item_url(linked.sessions, client, linked.link, EXERCISE, "Actor loss")
    assert linked.columns() == []
    stale = utcnow() - CLAIM_EXPIRY - timedelta(seconds=1)
    with transaction(linked.sessions) as session:  # that job crashed: its claim is older than the expiry
        row = session.scalar(select(LtiLineItem).where(LtiLineItem.context_id == linked.link.id))
        assert row is not None
        row.claimed_at = stale
    with linked.client() as client:
        url = line_item_url(linked.sessions, client, linked.link, EXERCISE, "Actor loss")
    [column] = linked.columns()
    assert url == column["id"] and linked.row() == (url, None)


def test_a_failed_creation_lets_go_of_its_claim(linked: Linked) -> None:
    def lms_down_after_the_lookup(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO LTI_LINE_ITEMS"):  # the claim: next, the creation
            linked.platform.post("/test/fail-ags/1")

    event.listen(linked.engine, "before_cursor_execute", lms_down_after_the_lookup)
    try:
        with linked.client() as client, pytest.raises(LmsUnreachable, match="a new gradebook column"):
            line_item_url(linked.sessions, client, linked.link, EXERCISE, "Actor loss")
    finally:
        event.remove(linked.engine, "before_cursor_execute", lms_down_after_the_lookup)
    with linked.sessions() as session:
        assert session.scalar(select(LtiLineItem).where(LtiLineItem.context_id == linked.link.id)) is None
    with linked.client() as client:  # the next job claims it again and creates the one column
        url = line_item_url(linked.sessions, client, linked.link, EXERCISE, "Actor loss")
    assert [c["id"] for c in linked.columns()] == [url]


# --- migration 0026 ------------------------------------------------------------------------------


BEFORE = "0023_mistake_title"
AFTER = "0026_lti_claimed_at"
CLAIM_TIME = "2026-12-01T10:00:00.123456+00:00"


def _fill(engine: Engine) -> None:
    command.upgrade(alembic_config(engine), BEFORE)
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO lti_platforms (id, name, issuer, client_id, auth_login_url, auth_token_url, jwks_url, created_at) "
            "VALUES (1, 'LMS', 'https://lms.example', 'c', 'https://lms.example/a', 'https://lms.example/t', "
            "'https://lms.example/j', '2026-01-01')"))
        conn.execute(text(
            "INSERT INTO lti_contexts (id, platform_id, deployment_id, context_id, course_id, title, ags_scopes, "
            "auto_grades, sync_attempts) VALUES (1, 1, 'd', 'ctx', 1, 'Course', '', false, 0)"))
        for n, url in enumerate(["https://lms.example/li/1", "", f"claimed:{CLAIM_TIME}", "claimed:garbage"]):
            conn.execute(
                text("INSERT INTO lti_line_items (id, context_id, exercise, url) VALUES (:id, 1, :ex, :url)"),
                {"id": n + 1, "ex": f"ex-{n}", "url": url},
            )


def _rows(engine: Engine) -> list[tuple[Any, ...]]:
    with Session(engine) as session:
        return [
            (row.exercise, row.url, row.claimed_at)
            for row in session.scalars(select(LtiLineItem).order_by(LtiLineItem.id))
        ]


def test_migration_0026_turns_claims_into_the_column_and_back(settings: Settings) -> None:  # noqa: F811
    engine = make_engine(settings.DATABASE_URL)
    try:
        _fill(engine)
        command.upgrade(alembic_config(engine), AFTER)
        assert _rows(engine) == [
            ("ex-0", "https://lms.example/li/1", None),
            ("ex-1", None, None),  # a column a deep-linking answer asked for
            ("ex-2", None, datetime.fromisoformat(CLAIM_TIME)),  # a claim: its time kept
            ("ex-3", None, datetime(1970, 1, 1, tzinfo=UTC)),  # unreadable: stale at once, as before
        ]
        command.downgrade(alembic_config(engine), BEFORE)
        with engine.connect() as conn:
            urls = conn.execute(text("SELECT url FROM lti_line_items ORDER BY id")).scalars().all()
        assert urls == ["https://lms.example/li/1", "", f"claimed:{CLAIM_TIME}", "claimed:1970-01-01T00:00:00+00:00"]
        command.upgrade(alembic_config(engine), "head")
        assert _rows(engine)[2] == ("ex-2", None, datetime.fromisoformat(CLAIM_TIME))
    finally:
        engine.dispose()
