"""Fixes of the fourth LTI red team (``tests/lti/test_attacks_round4``), tested for what the
attacks did not reach: the grades thread's bound per LMS, and the URLs the LMS stores coming
from the configured public address, never the request's Host header."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from html import unescape
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from fastapi import FastAPI, Request
from joserfc.jws import extract_compact
from sqlalchemy import func, select

from server.lti import claims as c
from server.lti.jobs import MAX_JOBS_PER_PLATFORM
from server.models import LtiLogin
from tests.lti.conftest import Lti
from tests.lti.servers import launch
from tests.lti.test_attacks_round4 import SlowLms, _automatic, _graded_course, _login, _wait
from tests.lti.test_redteam import people, served_and_registered  # noqa: F401  (people: the module's LMS users)


@dataclass
class CountingLms(SlowLms):
    """The slow LMS that also counts the score requests it holds at once."""

    in_flight: int = 0
    most_in_flight: int = 0

    def app(self) -> FastAPI:
        app = super().app()

        @app.middleware("http")  # added last: outermost, around the slow answer
        async def count(request: Request, call_next: Any) -> Any:
            if request.method != "POST" or not request.url.path.endswith("/scores"):
                return await call_next(request)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            try:
                return await call_next(request)
            finally:
                self.in_flight -= 1

        return app


@pytest.fixture(scope="module")
def counting(lti: Lti) -> Iterator[CountingLms]:
    yield from served_and_registered(lti, CountingLms)


def test_one_lms_holds_at_most_its_share_of_the_grades_jobs(lti: Lti, counting: CountingLms) -> None:
    """Three of one LMS's courses due at once: they run in parallel, but never more than
    ``MAX_JOBS_PER_PLATFORM`` of them (counted at the LMS: scores it holds at once)."""
    links = [_graded_course(lti, counting, f"R4F-bound-{n}", [f"r4f-b{n}-a", f"r4f-b{n}-b"]) for n in range(3)]
    before = len(counting.scores)
    counting.delay, counting.most_in_flight = 0.5, 0
    _automatic(lti, links, True)
    try:
        assert _wait(lambda: len(counting.scores) - before >= 6)
    finally:
        _automatic(lti, links, False)
        counting.delay = 0.0
    assert counting.most_in_flight == MAX_JOBS_PER_PLATFORM


def test_an_outsiders_logins_store_nothing(lti: Lti) -> None:
    with lti.state.session_factory() as session:
        before = session.scalar(select(func.count()).select_from(LtiLogin))
    with lti.client() as outsider:
        for _ in range(20):
            assert _login(outsider, lti).status_code == 302
    with lti.state.session_factory() as session:
        assert session.scalar(select(func.count()).select_from(LtiLogin)) == before


@pytest.fixture
def public_url(lti: Lti) -> Iterator[str]:
    """The tool configured with its public address (``PPO_GRADER_PUBLIC_URL``), as behind a proxy."""
    original = lti.state.settings
    lti.state.settings = original.model_copy(update={"PUBLIC_URL": lti.tool})
    try:
        yield lti.tool
    finally:
        lti.state.settings = original


def test_the_redirect_uri_and_the_content_item_url_come_from_the_public_url_not_the_host_header(
    lti: Lti, public_url: str
) -> None:
    host = {"Host": "evil.example"}  # what a proxy that rewrites Host (or passes the client's on) sends
    with lti.client() as browser:
        login = browser.get(
            f"{lti.tool}/lti/login",
            params={"iss": lti.platform.url, "login_hint": "x", "target_link_uri": f"{public_url}/lti/launch"},
            headers=host,
            follow_redirects=False,
        )
        assert login.status_code == 302, login.text[-300:]
        assert parse_qs(urlsplit(login.headers["location"]).query)["redirect_uri"] == [f"{public_url}/lti/launch"]

        picker = launch(browser, lti.platform, user="prof", context="L1", message="deeplink").response
        assert picker.status_code == 200, picker.text[-300:]
        found = re.search(r'<form id="lti-picker" method="post" action="([^"]+)"', picker.text)
        assert found, picker.text[-300:]
        answer = browser.post(
            lti.tool + unescape(found.group(1)),
            content=urlencode([("exercise", "actor-loss")]),
            headers={**host, "Content-Type": "application/x-www-form-urlencoded"},
        )
    assert answer.status_code == 200, answer.text[-300:]
    signed = re.search(r'name="JWT" value="([^"]+)"', answer.text)
    assert signed, answer.text[-300:]
    body = json.loads(extract_compact(unescape(signed.group(1)).encode()).payload)
    assert [item["url"] for item in body[c.CONTENT_ITEMS]] == [f"{public_url}/lti/launch"]
