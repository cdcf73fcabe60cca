"""Fourth white-box red team of LTI 1.3 (issue 35): attacks that worked, each a test that
asserts what a safe tool does (strict xfails until fixed: a signed OIDC state, no transaction
across LMS calls, grades jobs bounded per LMS; the write probe of the lock tests is now a
launch, since a login writes nothing), and the harness's sanity test.

The attacker plays the parts of the earlier red teams (``tests/lti/test_redteam``): an outsider
with a browser, the independent test platform's users, and hostile LMSs (:class:`Hostile`,
registered with the tool as an administrator would) whose launches and service answers the
attacker writes. Everything goes over real HTTP to the real tool and its real background
grades thread.

Attempts that failed (the tool held), checked against the code that stops them:

- login CSRF with another browser's sign-in link or picker token: refused (MAC cookies bound to the launch's browser).
- state of platform A with a token of platform B, or a registered deployment of B in A's launch: refused.
- the same ``sub`` and email from two issuers: two accounts (``LtiUser`` keyed by platform; email never links).
- an LMS name/title/roles with HTML into the launch, picker and LMS pages: escaped (``e()``); CSP on LTI pages.
- dashboard LTI forms from another site, without the CSRF token, or naming another LMS's course: 403/404.
- a learner's deep-linking request, or a learner first into a course no instructor opened: refused.
- grades to another platform or for a dropped learner: ``_learners`` joins the link's platform, leaves out the dropped.
- a ticket after its token is revoked, or twice: refused; ``target_link_uri`` of another site: refused.
- service URLs to link-local/loopback from a public LMS, redirects, proxies from the environment: refused.
- Host-header reflection: ``config.json`` uses PUBLIC_URL (the OIDC ``redirect_uri`` and the content item
  ``url`` still come from ``url_for``, i.e. the Host header: no attack from a browser, noted in the report).
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from html import unescape
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from fastapi import FastAPI, Request
from sqlalchemy import select

from server.catalogue.service import list_exercises
from server.courses.corrections import override
from server.courses.sets import publish
from server.db import transaction
from server.models import Course, LtiContext
from tests.lti.conftest import Lti
from tests.lti.servers import _form, launch
from tests.lti.test_redteam import (  # noqa: F401  (module fixtures, used by name)
    Hostile,
    _deep_linking,
    _hostile_course,
    _hostile_learners,
    hostile_launch,
    people,
    served_and_registered,
)

EXERCISE = "actor-loss"
#: The burst of the first attack: what evicted every login in flight when the tool kept the
#: newest 50 per LMS (it now keeps none before the LMS's signed launch).
BURST = 200


@dataclass
class SlowLms(Hostile):
    """A hostile LMS that takes ``delay`` seconds over each score (well within the tool's
    per-request deadline): ``started`` counts the score requests it has begun answering."""

    delay: float = 0.0
    started: int = 0
    #: The same for each read of the line items list (a column looked up).
    lookup_delay: float = 0.0
    lookups: int = 0

    def app(self) -> FastAPI:
        app = super().app()

        @app.middleware("http")
        async def slow_scores(request: Request, call_next: Any) -> Any:
            if request.method == "POST" and request.url.path.endswith("/scores"):
                self.started += 1
                await asyncio.sleep(self.delay)
            if request.method == "GET" and request.url.path == "/ags/lineitems":
                self.lookups += 1
                await asyncio.sleep(self.lookup_delay)
            return await call_next(request)

        return app


@pytest.fixture(scope="module")
def slow(lti: Lti) -> Iterator[SlowLms]:
    yield from served_and_registered(lti, SlowLms)


@pytest.fixture(scope="module")
def quick(lti: Lti) -> Iterator[SlowLms]:
    """A second hostile-harness LMS that answers at once: here, an honest school's LMS."""
    yield from served_and_registered(lti, SlowLms)


def _graded_course(lti: Lti, lms: SlowLms, context: str, learners: list[str]) -> int:
    """A course of ``lms`` whose ``learners`` each hold a score to send; returns its link's id."""
    slug = _hostile_learners(lti, lms, context, learners)
    with transaction(lti.state.session_factory) as session:
        course = session.scalar(select(Course).where(Course.slug == slug))
        assert course is not None
        publish(session, course, EXERCISE)
        for login in learners:  # login names made from the LMS names
            override(session, course, login, EXERCISE, 70, "by hand", "prof")
        link = session.scalar(select(LtiContext).where(LtiContext.course_id == course.id))
        assert link is not None
        return link.id


def _automatic(lti: Lti, link_ids: list[int], on: bool) -> None:
    with transaction(lti.state.session_factory) as session:
        for link_id in link_ids:
            link = session.get(LtiContext, link_id)
            assert link is not None
            link.auto_grades = on


def _wait(condition: Any, seconds: float = 90) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _login(browser: httpx.Client, lti: Lti) -> httpx.Response:
    """The first step of a launch from the independent platform (what its form starts)."""
    return browser.get(
        f"{lti.tool}/lti/login",
        params={"iss": lti.platform.url, "login_hint": "x", "target_link_uri": f"{lti.tool}/lti/launch"},
        follow_redirects=False,
    )


def _a_launch(lti: Lti) -> httpx.Response:
    """A launch from the independent platform, start to finish: the probe of the tool's writes
    (its nonce spent, the user's membership, a sign-in ticket; the login itself writes nothing)."""
    with lti.client() as browser:
        return launch(browser, lti.platform, user="prof", context="L1").response


def test_the_slow_lms_harness_receives_the_scores(lti: Lti, slow: SlowLms) -> None:
    """Not an attack: the slow LMS is a working platform whose gradebook gets each learner's
    score from the background job, so the xfails below fail for the attack's reason."""
    link = _graded_course(lti, slow, "R4-sane", ["r4-sane-a", "r4-sane-b"])
    _automatic(lti, [link], True)
    try:
        assert _wait(lambda: len(slow.scores) >= 2)
    finally:
        _automatic(lti, [link], False)
    assert sorted(s["userId"] for s in slow.scores) == ["r4-sane-a", "r4-sane-b"]


# --- an outsider's logins push out the logins of real users -----------------------------------------


def test_an_outsiders_burst_of_logins_does_not_refuse_a_real_launch_in_flight(lti: Lti) -> None:
    with lti.client() as prof:
        start = prof.get(lti.platform.launch_url(user="prof", context="L1"))  # the tool's login, the LMS's form
        assert start.status_code == 200, start.text[:400]
        action, form = _form(start.text)
        with lti.client() as outsider:  # no LMS account, no cookie: the login is free to begin
            for _ in range(BURST):
                assert _login(outsider, lti).status_code == 302
        answer = prof.post(action, data=form)  # the LMS's form arrives a moment later
    assert answer.status_code == 200, answer.text[-400:]


# --- a slow LMS's grades job -----------------------------------------------------------------------------


def test_a_slow_lms_grades_job_does_not_hold_up_the_tools_writes(lti: Lti, slow: SlowLms) -> None:
    learners = [f"r4-db-{n}" for n in range(4)]
    link = _graded_course(lti, slow, "R4-db", learners)
    before = len(slow.scores)
    slow.delay, slow.started = 2.0, 0
    _automatic(lti, [link], True)
    try:
        assert _wait(lambda: slow.started >= 1)  # the job has written (the column) and waits on the LMS
        probe = _a_launch(lti)  # rows written: a launch's
        received_by_then = len(slow.scores) - before
        assert _wait(lambda: len(slow.scores) - before >= len(learners))
    finally:
        _automatic(lti, [link], False)
        slow.delay = 0.0
    assert probe.status_code == 200, probe.text[-300:]
    # a safe tool: the launch is written while the LMS still takes its time over the scores
    assert received_by_then < len(learners) - 1, received_by_then


def test_a_slow_lms_does_not_hold_back_another_lms_grades(lti: Lti, slow: SlowLms, quick: SlowLms) -> None:
    learners = [f"r4-hol-{n}" for n in range(4)]
    slow_link = _graded_course(lti, slow, "R4-hol", learners)  # made first: first in the sweep
    quick_link = _graded_course(lti, quick, "R4-quick", ["r4-quick-a"])
    slow_before, quick_before = len(slow.scores), len(quick.scores)
    slow.delay = 2.0
    _automatic(lti, [slow_link, quick_link], True)  # both due at the same sweep
    try:
        assert _wait(lambda: len(quick.scores) > quick_before)
        slow_by_then = len(slow.scores) - slow_before
        assert _wait(lambda: len(slow.scores) - slow_before >= len(learners))
    finally:
        _automatic(lti, [slow_link, quick_link], False)
        slow.delay = 0.0
    # a safe tool: the honest LMS's score does not wait for all of the slow LMS's
    assert slow_by_then < len(learners) - 1, slow_by_then


def test_a_slow_lms_column_lookup_at_deep_linking_does_not_hold_up_the_tools_writes(lti: Lti, slow: SlowLms) -> None:
    context = "R4-dl"
    chosen = [x.slug for x in list_exercises()][:3]
    assert len(chosen) == 3
    done: list[httpx.Response] = []
    with lti.client() as prof:
        _hostile_course(prof, lti, slow, context)
        picker = hostile_launch(
            prof, lti, slow, sub=f"h-prof-{context}", context=context, **_deep_linking(slow, f"{slow.url}/dl/return")
        )
        found = re.search(r'<form id="lti-picker" method="post" action="([^"]+)"', picker.text)
        assert found, picker.text[-300:]
        action = lti.tool + unescape(found.group(1))
        slow.lookup_delay, slow.lookups = 2.0, 0

        def send() -> None:
            done.append(
                prof.post(
                    action,
                    content=urlencode([("exercise", slug) for slug in chosen]),
                    headers={"Origin": lti.tool, "Content-Type": "application/x-www-form-urlencoded"},
                )
            )

        sender = threading.Thread(target=send)
        sender.start()
        try:
            assert _wait(lambda: slow.lookups >= 1)  # the picker's answer is under way, waiting on the LMS
            probe = _a_launch(lti)  # rows written: a launch's
            lookups_by_then = slow.lookups
        finally:
            sender.join(90)
            slow.lookup_delay = 0.0
    assert done and done[0].status_code == 200, done[0].text[-300:] if done else "no answer"
    assert probe.status_code == 200, probe.text[-300:]
    # a safe tool: the launch is written while the LMS still takes its time over the first lookup
    assert lookups_by_then < len(chosen), lookups_by_then
