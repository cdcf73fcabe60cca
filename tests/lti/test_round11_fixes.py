"""What the round 11 fixes keep working besides refusing the attacks (``test_attack_round11``):
a launch past the few that may wait on a key-set refresh is refused at once, 503 with
``Retry-After``, and a launch that waits holds no pooled connection while it sleeps and gives
its place back; a deep-linking answer reads the LMS's columns once for every exercise ticked,
and when it cannot, tells the instructor on the page (no auto-post) and in the LMS's message
which exercises ask for a new column."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from html import unescape
from typing import Any
from urllib.parse import urlencode

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from sqlalchemy import Engine, select, update
from sqlalchemy.orm import Session

from server.db import transaction
from server.lti import claims as c
from server.lti import platforms, router
from server.lti.errors import LaunchRefused
from server.models import LtiLineItem, LtiPlatform, utcnow
from tests.lti.conftest import Lti
from tests.lti.test_attack_round10 import Scripted, _answer_claims, _deep_linking_request, _picker
from tests.lti.test_races import engine  # noqa: F401  (fixture)
from tests.lti.test_redteam import (  # noqa: F401  (module fixtures, used by name)
    _hostile_course,
    people,
    served_and_registered,
)
from tests.pg import pg_database, pg_url  # noqa: F401  (fixtures)
from tests.server.conftest import db_backend, pytest_generate_tests, settings  # noqa: F401  (fixtures)

# --- launches waiting on a key-set refresh --------------------------------------------------------


def _in_flight(engine: Engine) -> int:  # noqa: F811
    """The race LMS's key set: a day old, its refresh claimed a moment ago by another launch."""
    with Session(engine) as session:
        platform = session.scalars(select(LtiPlatform)).one()
        platform.jwks = '{"keys": [], "refused": {}}'
        platform.jwks_fetched_at = utcnow() - timedelta(days=1)
        platform.jwks_miss_at = utcnow()
        session.commit()
        return platform.id


class Clock:
    """``platforms.time``, counted: each sleep notes the pool's connections checked out, and
    at the ``done_at``-th the refresh in flight stores its set (another session, committed)."""

    def __init__(self, engine: Engine, done_at: int) -> None:  # noqa: F811
        self.engine, self.done_at = engine, done_at
        self.held: list[int] = []
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.held.append(self.engine.pool.checkedout())  # type: ignore[attr-defined]
        if len(self.held) == self.done_at:
            with Session(self.engine) as other:
                other.execute(update(LtiPlatform).values(jwks_fetched_at=utcnow() + timedelta(seconds=1)))
                other.commit()


def test_a_launch_past_the_waiters_is_refused_at_once_with_a_retry_after(
    engine: Engine,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    platform_id = _in_flight(engine)
    clock = Clock(engine, done_at=10**6)
    monkeypatch.setattr(platforms, "time", clock)
    monkeypatch.setitem(platforms._waiting, platform_id, platforms.MAX_REFRESH_WAITERS)  # every place taken
    with Session(engine) as session:
        platform = session.get(LtiPlatform, platform_id)
        assert platform is not None
        with pytest.raises(LaunchRefused) as refused:
            platforms._await_refresh(session, platform, utcnow())
    assert clock.held == []  # not one poll: answered at once
    assert refused.value.status_code == 503 and refused.value.headers == {
        "Retry-After": str(platforms.BUSY_RETRY_SECONDS)
    }
    assert platforms._waiting[platform_id] == platforms.MAX_REFRESH_WAITERS  # nobody's place taken or freed
    page = router._refused(refused.value)
    assert page.status_code == 503 and page.headers["Retry-After"] == str(platforms.BUSY_RETRY_SECONDS)
    assert b"being refreshed" in page.body and b"Launch again" in page.body


def test_a_waiting_launch_holds_no_connection_while_it_sleeps_and_gives_its_place_back(
    engine: Engine,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    platform_id = _in_flight(engine)
    clock = Clock(engine, done_at=3)
    monkeypatch.setattr(platforms, "time", clock)
    with Session(engine) as session:
        platform = session.get(LtiPlatform, platform_id)
        assert platform is not None
        assert engine.pool.checkedout() == 1  # type: ignore[attr-defined]  # the launch's read, before the wait
        platforms._await_refresh(session, platform, utcnow())
        assert platform.jwks_fetched_at is not None and platform.jwks_fetched_at > platform.jwks_miss_at  # type: ignore[operator]
    assert clock.held == [0, 0, 0]  # three polls, the third finding the set stored; no connection held asleep
    assert platform_id not in platforms._waiting  # its place given back


# --- deep linking: one listing of the columns -------------------------------------------------------


@dataclass
class Columns(Scripted):
    """A hostile LMS that lists some ppo-grader columns (``listed``: exercise slugs) and counts
    the reads of its line items; ``columns_down``: they answer 500."""

    listed: tuple[str, ...] = ()
    reads: int = 0
    columns_down: bool = False

    def app(self) -> FastAPI:
        app = super().app()

        @app.middleware("http")
        async def count(request: Request, call_next: Any) -> Any:
            if request.method == "GET" and request.url.path == "/ags/lineitems":
                self.reads += 1
                if self.columns_down:
                    return JSONResponse({"error": "down"}, status_code=500)
            return await call_next(request)

        return app

    def listing(self) -> None:
        self.lineitems_body = json.dumps(
            [
                {"id": f"{self.url}/ags/lineitems/{slug}", "resourceId": slug, "tag": c.LINE_ITEM_TAG, "label": slug}
                for slug in self.listed
            ]
        ).encode()


@pytest.fixture
def columns(lti: Lti) -> Iterator[Columns]:
    yield from served_and_registered(lti, Columns)


def _answered(lti: Lti, lms: Columns, context: str, pick: int) -> tuple[Any, list[str]]:
    with lti.client() as browser:
        _hostile_course(browser, lti, lms, context)
        body = _deep_linking_request(lms, "__NONCE__", context, None, ["ltiResourceLink"])
        picker = _picker(browser, lti, lms, context, json.dumps(body))
        assert picker.status_code == 200, re.sub(r"\s+", " ", picker.text)[-300:]
        offered = re.findall(r'name="exercise" value="([^"]+)"', picker.text)[:pick]
        assert len(offered) == pick, offered
        action = re.search(r'<form id="lti-picker" method="post" action="([^"]+)"', picker.text)
        assert action, picker.text[-600:]
        lms.reads = 0
        answer = browser.post(
            lti.tool + unescape(action.group(1)),
            content=urlencode([("exercise", slug) for slug in offered]),
            headers={"Origin": lti.tool, "Content-Type": "application/x-www-form-urlencoded"},
        )
    assert answer.status_code == 200, answer.text[-300:]
    return answer, offered


def test_a_deep_linking_answer_reads_the_columns_once_for_every_exercise(lti: Lti, columns: Columns) -> None:
    columns.listed = ("actor-loss", "critic-loss")  # two of the exercises have a column already
    columns.listing()
    answer, offered = _answered(lti, columns, "R11F-dl-one", 4)
    assert columns.reads == 1  # one listing for the four
    items = json.loads(_answer_claims(answer))[c.CONTENT_ITEMS]
    asked = {i["custom"][c.CUSTOM_EXERCISE] for i in items if "lineItem" in i}
    has = set(columns.listed) & set(offered)
    assert asked == set(offered) - has  # a column asked for only where the LMS lists none
    assert "data-autosubmit" in answer.text and "could not be read" not in answer.text
    with lti.state.session_factory() as session:
        urls = set(session.scalars(select(LtiLineItem.url)))
    assert {f"{columns.url}/ags/lineitems/{slug}" for slug in has} <= urls  # the columns found, remembered


def test_a_deep_linking_answer_that_cannot_read_the_columns_says_what_it_asked_for(lti: Lti, columns: Columns) -> None:
    columns.columns_down = True
    answer, offered = _answered(lti, columns, "R11F-dl-down", 3)
    assert columns.reads == 1  # stopped at the first failure: nothing more asked of the LMS
    claims = json.loads(_answer_claims(answer))
    assert len(claims[c.CONTENT_ITEMS]) == 3  # every exercise is linked
    message = claims[c.DL_MESSAGE]
    assert "could not be read" in message and all(slug in message for slug in offered), message
    # the instructor reads it on the page before going back (no auto-post)
    assert "could not be read" in unescape(answer.text) and "data-autosubmit" not in answer.text
    with transaction(lti.state.session_factory) as session:
        platform = session.scalar(select(LtiPlatform).where(LtiPlatform.issuer == columns.issuer))
        assert platform is not None and platform.failed_service is None  # the token worked: no failure kept
