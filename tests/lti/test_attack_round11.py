"""Eleventh white-box red team of LTI 1.3: each attempt of this round a test over real HTTP against
the real tool (``tests/lti/conftest``), the independent test platform (``tests/lti/platform``)
and hostile LMSs (``tests/lti/test_attack_round10.Scripted``: a platform registered with the tool
as an administrator would, whose launches and key set the attacker writes, and whose key set can
be held back). An attack that works is a strict xfail asserting what a safe tool does; one the
tool holds is a plain test.

Attacks that worked (strict xfails):

- an outsider's burst of forged launches, while a night-old key set (older than twice
  ``LTI_JWKS_MAX_AGE_SECONDS``) is being fetched from an LMS that answers slowly, holds every
  worker thread of the tool: each launch that lost the refresh claim now waits for it
  (``server.lti.platforms._await_refresh``, up to ``REFRESH_WAIT``, 17 s from the claim), with
  no bound on how many wait, and each waiter holds a thread (and, between its polls, a pooled
  database connection). Every other request of the tool that needs a thread or the database,
  for every platform and the tool's own pages, stalls meanwhile; a claim is free again each
  ``MISS_COOLDOWN`` (60 s), so the outsider repeats it every minute. The launches need no key
  (a forged signature under the LMS's real ``kid``: the wait comes before the signature) and
  cost the outsider one login each. Medium: availability of the whole tool, from an LMS whose
  key-set URL is slow (an outage that hangs rather than refuses, or a hostile registered LMS).
  (``test_launches_waiting_on_a_slow_key_set_refresh_do_not_hold_every_worker``: a page of the
  tool's own, ``/lti/jwks``, answers in ~0.05 s before the burst and not within 8 s during it)
- a deep-linking answer looks up each ticked exercise's gradebook column
  (``server.lti.deeplink._column`` -> ``lineitems.lookup``) with a paged read of its own budget
  (each exchange up to 15 s, the read up to ``services.MAX_PAGED_SECONDS``, 60 s), one after
  another in the request's worker thread, and a lookup that fails moves on to the next: an LMS
  whose line-items list answers slowly (or a hostile registered LMS, whose "instructor" ticks
  every exercise offered, up to ``MAX_CHOSEN`` = 100) holds a worker thread for 15-60 s per
  exercise, minutes per picker post; 40 such posts hold every thread. Low-medium: availability
  of the whole tool, from a registered LMS (or a slow one, the instructor's page hanging).
  (``test_a_deep_linking_answer_waits_on_a_slow_lms_within_one_budget``: driven with
  ``MAX_PAGED_SECONDS`` scaled to 0.4 s, so a bound on the whole answer derived from it shows;
  what is asserted is the count of slow reads the answer waited on)
- the same answer writes in the middle of its LMS calls: ``LmsClient`` is given the request's
  own session, so a token request that fails (or the first that works while an earlier token
  failure is kept on the platform) is written there (``service_failed`` / ``service_worked``,
  an UPDATE of the platform's row) and stays uncommitted while the answer goes on calling the
  LMS for every other exercise, against ``deeplink.answer``'s "never inside a transaction while
  the LMS answers". On SQLite (WAL: one writer) that is the whole database's write lock: every
  write of the tool (a launch spending its nonce, a submission, a verdict) waits for it, and
  after ``busy_timeout`` (30 s) fails; with the slow lookups above, for minutes. On PostgreSQL,
  the platform's row (its launches' key-set claims, its jobs' notes). Medium on SQLite, low on
  PostgreSQL; from a registered LMS whose token URL fails once, or any with a failure kept.
  (``test_a_deep_linking_answer_holds_no_write_lock_while_the_lms_answers``: the LMS, at its
  second token request, cannot begin a write on the tool's database; at its first, it can)

Fixed since (the xfail markers gone; ``test_round11_fixes`` keeps the new rules): at most
``platforms.MAX_REFRESH_WAITERS`` (4) launches of a platform wait on its refresh, the others
are refused at once (503, ``Retry-After``), none holding a pooled connection while it waits; a
deep-linking answer reads the LMS's columns in one listing, one budget for the whole answer,
and stops at its first failure (the instructor told which exercises ask for a new column); the
LMS client writes a token request's outcome in a short transaction of its own. The forgeries
of the burst may now also be refused 503; the write-lock test now makes two answers (the
first's token fails, the second's works and clears the kept failure before reading the line
items), as an answer asks the LMS nothing more after a failure.

Attempts the tool held (plain tests): a weak (1024-bit) key listed first under the LMS's real
``kid`` beside its real key (the overlap of a rotation): a launch signed by the weak key is
refused, the real key still verifies; a deep-linking request with ``accept_multiple: false``
answered with several ticked exercises, "the whole set", or both, sends one item; a launch
signed with a key the LMS has since removed from its set, once the cached set is past its
maximum age, is refused (the refresh finds the key gone), also when an outsider's forgery under
an unknown kid is what made the refresh; a hostile LMS's roster listing the real LMS's users
(their ``sub`` and email) as its instructors and system/institution administrators makes new
learner accounts of its own, and the real accounts gain no enrollment and no global role.

Tried without a test: ``/lti/login`` is an ``async`` route whose platform lookup
(``begin_login`` -> ``find_platform``) runs on the event loop, so with the connection pool taken
(the burst above takes it) a login could block every request of the process until a connection
frees. Driven once during the burst (a 404 answered on the event loop, before and while three
logins were in): no freeze measured, as the waiters hand their connections back every 0.2 s;
bounding the burst removes this way to take the pool.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from html import unescape
from typing import Any, TypeVar, cast
from urllib.parse import urlencode

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from joserfc import jwt
from joserfc.jwk import KeyParameters, RSAKey
from sqlalchemy import select, update
from sqlalchemy.engine import make_url

from server.db import transaction
from server.lti import claims as c
from server.lti import platforms, services
from server.models import Course, Enrollment, LtiPlatform, LtiUser, Role, User, utcnow
from tests.lti.conftest import LEARNER, STAFF, Lti
from tests.lti.test_attack_round10 import (
    EXERCISE,
    Scripted,
    _answer_claims,
    _deep_linking_request,
    _fetches,
    _is_page,
    _picker,
    _post,
)
from tests.lti.test_redteam import (  # noqa: F401  (module fixtures, used by name)
    _hostile_course,
    course_l1,
    hostile_launch,
    people,
    roster_button,
    roster_outcome,
    served_and_registered,
    tool_login,
)


@pytest.fixture(scope="module")
def evil(lti: Lti) -> Iterator[Scripted]:
    """One hostile LMS for the tests that leave its key set alone."""
    yield from served_and_registered(lti, Scripted)


@pytest.fixture
def rotating(lti: Lti) -> Iterator[Scripted]:
    """A hostile LMS of the test's own (its key set is changed by the test)."""
    yield from served_and_registered(lti, Scripted)


def _age_key_set(lti: Lti, lms: Scripted, age: timedelta) -> None:
    """The LMS's cached key set as fetched ``age`` ago, no refresh claimed lately."""
    with transaction(lti.state.session_factory) as session:
        session.execute(
            update(LtiPlatform)
            .where(LtiPlatform.issuer == lms.issuer)
            .values(jwks_fetched_at=utcnow() - age, jwks_miss_at=None)
        )


def _limit(lti: Lti) -> timedelta:
    return timedelta(seconds=lti.settings.LTI_JWKS_MAX_AGE_SECONDS)


# --- cost: launches waiting on a key-set refresh -------------------------------------------------

T = TypeVar("T")

#: The outsider's forged launches (more than the tool's 40 worker threads).
WAITERS = 44


def _probe(context: ssl.SSLContext, url: str, timeout: float, status: int = 200) -> float:
    """How long ``url`` of the tool takes to answer (``timeout`` if it does not in that time)."""
    start = time.monotonic()
    try:
        assert httpx.get(url, verify=context, timeout=timeout).status_code == status
    except httpx.TimeoutException:
        return timeout
    return time.monotonic() - start


def _during_a_burst(
    lti: Lti, lms: Scripted, monkeypatch: pytest.MonkeyPatch, context: str, measure: Callable[[], T]
) -> T:
    """``measure()`` while an outsider's :data:`WAITERS` forged launches (the LMS's real kid, a
    stranger's signature, one free login each, begun beforehand) wait on the refresh another of
    them claimed of the LMS's night-old key set, which the LMS answers slowly; what it gave."""
    with lti.client() as browser:
        _hostile_course(browser, lti, lms, context)
    tls = ssl.create_default_context(cafile=str(lti.cert))
    logins = []
    for _ in range(WAITERS + 1):
        client = httpx.Client(verify=tls, timeout=60)
        nonce, state = tool_login(client, lti, lms)
        logins.append((client, nonce, state))
    stranger = RSAKey.generate_key(2048, auto_kid=True)  # no key of the LMS's: a forgery
    waiting = [0]
    lock = threading.Lock()
    original = platforms._await_refresh

    def counted(*args: Any, **kwargs: Any) -> None:
        with lock:
            waiting[0] += 1
        original(*args, **kwargs)

    monkeypatch.setattr(platforms, "_await_refresh", counted)  # counts the waiters, changes nothing
    answers: list[int] = []

    def forged(n: int) -> None:
        client, nonce, state = logins[n]
        token = jwt.encode(
            {"alg": "RS256", "kid": str(lms.key.kid)},
            lms.claims(nonce, sub=f"h-r11-{context}-{n}", context=context, roles=[LEARNER]),
            stranger,
        )
        try:
            answers.append(_post(client, lti, token, state).status_code)
        except httpx.HTTPError:
            answers.append(0)

    _age_key_set(lti, lms, 2 * _limit(lti) + timedelta(hours=1))  # last read yesterday evening
    lms.hold = True  # the LMS's key set answers slowly
    fetches = _fetches(lms)
    threads = [threading.Thread(target=forged, args=(n,)) for n in range(WAITERS + 1)]
    threads[0].start()  # the claim
    try:
        assert lms.entered.wait(30), "the first launch never fetched the key set"
        for thread in threads[1:]:
            thread.start()
        deadline = time.monotonic() + 10
        while waiting[0] < 10 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert waiting[0] >= 10, waiting[0]
        time.sleep(0.5)  # the rest of the burst in
        result = measure()
    finally:
        lms.release.set()
        for thread in threads:
            thread.join(60)
        for client, _, _ in logins:
            client.close()
    # none of the forgeries got in; those past the few that may wait are refused at once (503)
    assert all(code in (401, 502, 503) for code in answers), answers
    # the claimed refresh, and one on a bad signature (the refresh found the kid, so it gave the
    # cooldown back): the burst costs the LMS little; its cost is the tool's threads held
    assert _fetches(lms) <= fetches + 2
    return result


def test_launches_waiting_on_a_slow_key_set_refresh_do_not_hold_every_worker(
    lti: Lti, rotating: Scripted, monkeypatch: pytest.MonkeyPatch
) -> None:
    tls = ssl.create_default_context(cafile=str(lti.cert))
    page = f"{lti.tool}/lti/jwks"  # a page of the tool's own: a thread and the database, no LMS
    _probe(tls, page, 30)  # warm: the tool's key made and derived once
    baseline = min(_probe(tls, page, 30) for _ in range(3))
    under_attack = _during_a_burst(lti, rotating, monkeypatch, "R11-hold", lambda: _probe(tls, page, 8))
    assert under_attack < max(3.0, 10 * baseline), (under_attack, baseline)


# --- keys -----------------------------------------------------------------------------------------


def _weak_key(kid: str) -> RSAKey:
    private = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return RSAKey.import_key(pem, cast(KeyParameters, {"kid": kid}))


@pytest.mark.filterwarnings("ignore:Key size should be")
def test_a_weak_key_listed_under_the_real_kid_verifies_nothing(lti: Lti, rotating: Scripted) -> None:
    with lti.client() as browser:
        _hostile_course(browser, lti, rotating, "R11-weak")
    real = rotating.key
    weak = _weak_key(str(real.kid))
    rotating.first = weak  # listed first, under the same kid, as in a rotation's overlap
    _age_key_set(lti, rotating, _limit(lti) + timedelta(minutes=1))  # so the next launch reads it
    with lti.client() as browser:  # the LMS's real key: the set is read again, the launch verifies
        answer = hostile_launch(browser, lti, rotating, sub="h-r11-weak-1", context="R11-weak", roles=[LEARNER])
    assert answer.status_code == 200, re.sub(r"\s+", " ", answer.text)[-300:]
    rotating.key = weak  # the weak key signs (factored by an attacker: anyone's launch)
    with lti.client() as browser:
        forged = hostile_launch(browser, lti, rotating, sub="h-prof-R11-weak", context="R11-weak")
    rotating.key = real
    assert forged.status_code == 401 and _is_page(forged), forged.status_code


def test_a_key_removed_from_the_set_stops_verifying_past_the_max_age(lti: Lti, rotating: Scripted) -> None:
    """The LMS took its old key out (its new key under a new kid); the old key was stolen. Once
    the cached set is past its maximum age, the old key verifies nothing, also when an outsider's
    forgery (an unknown kid) is what makes the refresh."""
    with lti.client() as browser:
        _hostile_course(browser, lti, rotating, "R11-gone")
    old = rotating.key
    rotating.key = RSAKey.generate_key(2048, auto_kid=True)  # the set now lists the new key only
    _age_key_set(lti, rotating, _limit(lti) + timedelta(minutes=1))
    with lti.client() as attacker:
        nonce, state = tool_login(attacker, lti, rotating)
        made_up = jwt.encode({"alg": "RS256", "kid": "made-up"}, rotating.claims(nonce), old)
        assert _post(attacker, lti, made_up, state).status_code == 401
        nonce, state = tool_login(attacker, lti, rotating)
        body = rotating.claims(nonce, sub="h-prof-R11-gone", context="R11-gone")
        stolen = jwt.encode({"alg": "RS256", "kid": str(old.kid)}, body, old)
        answer = _post(attacker, lti, stolen, state)
    assert answer.status_code == 401 and _is_page(answer), answer.status_code


# --- deep linking ---------------------------------------------------------------------------------


def _picked(
    browser: httpx.Client, lti: Lti, lms: Scripted, context: str, multiple: bool, fields: list[tuple[str, str]]
) -> httpx.Response:
    body = _deep_linking_request(lms, "__NONCE__", context, None, ["ltiResourceLink"])
    body[c.DEEP_LINKING_SETTINGS]["accept_multiple"] = multiple
    picker = _picker(browser, lti, lms, context, json.dumps(body))
    assert picker.status_code == 200, re.sub(r"\s+", " ", picker.text)[-300:]
    action = re.search(r'<form id="lti-picker" method="post" action="([^"]+)"', picker.text)
    assert action, picker.text[-600:]
    return browser.post(
        lti.tool + unescape(action.group(1)),
        content=urlencode(fields),
        headers={"Origin": lti.tool, "Content-Type": "application/x-www-form-urlencoded"},
    )


def test_accept_multiple_false_sends_one_item_whatever_the_form_says(lti: Lti, evil: Scripted) -> None:
    both = [("exercise", EXERCISE), ("exercise", "critic-loss")]
    with lti.client() as browser:
        _hostile_course(browser, lti, evil, "R11-dl-one")
        first = _picked(browser, lti, evil, "R11-dl-one", True, both)  # both added (published) once
        assert first.status_code == 200, first.text[-300:]
        assert len(json.loads(_answer_claims(first))[c.CONTENT_ITEMS]) == 2
        for fields in (both, both + [("whole-set", "1")], [("whole-set", "1")]):
            answer = _picked(browser, lti, evil, "R11-dl-one", False, fields)
            assert answer.status_code == 200, answer.text[-300:]
            assert len(json.loads(_answer_claims(answer))[c.CONTENT_ITEMS]) == 1, fields


@dataclass
class SlowColumns(Scripted):
    """A hostile LMS whose line-items list (AGS) answers ``delay`` seconds late; ``lookups`` counts them."""

    delay: float = 0.0
    lookups: int = 0

    def app(self) -> FastAPI:
        app = super().app()

        @app.middleware("http")
        async def slow(request: Request, call_next: Any) -> Any:
            if request.method == "GET" and request.url.path == "/ags/lineitems" and self.delay:
                self.lookups += 1
                await asyncio.sleep(self.delay)
            return await call_next(request)

        return app


@pytest.fixture
def slow_columns(lti: Lti) -> Iterator[SlowColumns]:
    yield from served_and_registered(lti, SlowColumns)


#: The budget of one paged read of the LMS, cut down for the test (60 s in the tool).
READ_BUDGET = 0.4


def test_a_deep_linking_answer_waits_on_a_slow_lms_within_one_budget(
    lti: Lti, slow_columns: SlowColumns, monkeypatch: pytest.MonkeyPatch
) -> None:
    lms = slow_columns
    with lti.client() as browser:
        _hostile_course(browser, lti, lms, "R11-dl-slow")
        body = _deep_linking_request(lms, "__NONCE__", "R11-dl-slow", None, ["ltiResourceLink"])
        picker = _picker(browser, lti, lms, "R11-dl-slow", json.dumps(body))
        assert picker.status_code == 200, re.sub(r"\s+", " ", picker.text)[-300:]
        offered = re.findall(r'name="exercise" value="([^"]+)"', picker.text)
        assert len(offered) >= 4, offered
        action = re.search(r'<form id="lti-picker" method="post" action="([^"]+)"', picker.text)
        assert action, picker.text[-600:]
        monkeypatch.setattr(services, "MAX_PAGED_SECONDS", READ_BUDGET)  # each read's budget, scaled down
        lms.delay = 3 * READ_BUDGET  # every column lookup runs past its budget
        try:
            answer = browser.post(
                lti.tool + unescape(action.group(1)),
                content=urlencode([("exercise", slug) for slug in offered]),
                headers={"Origin": lti.tool, "Content-Type": "application/x-www-form-urlencoded"},
            )
        finally:
            lms.delay = 0.0
    assert answer.status_code == 200, answer.text[-300:]
    # counted: the slow reads the answer waited out (each a whole budget); one budget for the
    # answer would wait out one or two, not one per exercise ticked
    assert lms.lookups <= 2, (lms.lookups, len(offered))


@dataclass
class TokenTrouble(Scripted):
    """A hostile LMS whose token URL fails its first request (HTTP 500) and answers the later
    ones; each token request, and each read of its line items, first tries to begin a write on
    the tool's database (``database``, a SQLite file: another request of the tool writing at
    that moment), what it found kept in ``writable``."""

    database: str = ""
    tokens: int = 0
    writable: list[bool] = field(default_factory=list)

    def app(self) -> FastAPI:
        app = super().app()

        def try_to_write() -> bool:
            probe = sqlite3.connect(self.database, timeout=0.5)
            try:
                probe.execute("BEGIN IMMEDIATE")  # what any write of the tool begins with
                probe.rollback()
                return True
            except sqlite3.OperationalError:  # "database is locked"
                return False
            finally:
                probe.close()

        @app.middleware("http")
        async def token(request: Request, call_next: Any) -> Any:
            if request.method == "POST" and request.url.path == "/token":
                self.tokens += 1
                self.writable.append(await asyncio.to_thread(try_to_write))
                if self.tokens == 1:
                    return JSONResponse({"error": "temporarily_unavailable"}, status_code=500)
            elif request.method == "GET" and request.url.path == "/ags/lineitems":
                self.writable.append(await asyncio.to_thread(try_to_write))
            return await call_next(request)

        return app


@pytest.fixture
def token_trouble(lti: Lti) -> Iterator[TokenTrouble]:
    yield from served_and_registered(lti, TokenTrouble)


def _kept_failure(lti: Lti, lms: Scripted) -> str | None:
    with lti.state.session_factory() as session:
        return session.scalar(select(LtiPlatform.failed_service).where(LtiPlatform.issuer == lms.issuer))


def test_a_deep_linking_answer_holds_no_write_lock_while_the_lms_answers(lti: Lti, token_trouble: TokenTrouble) -> None:
    """Two answers: the first's token request fails (kept on the platform), the second's works
    (the kept failure cleared) and it reads the line items. (Since the fix an answer stops
    asking the LMS at its first failure, so the LMS call after the write is the second answer's
    line-items read.)"""
    lms = token_trouble
    lms.database = make_url(lti.settings.DATABASE_URL).database or ""
    assert lms.database.endswith("tool.db"), lms.database
    answers = []
    with lti.client() as browser:
        _hostile_course(browser, lti, lms, "R11-dl-lock")
        lms.tokens = 0
        for _ in range(2):
            body = _deep_linking_request(lms, "__NONCE__", "R11-dl-lock", None, ["ltiResourceLink"])
            picker = _picker(browser, lti, lms, "R11-dl-lock", json.dumps(body))
            assert picker.status_code == 200, re.sub(r"\s+", " ", picker.text)[-300:]
            offered = re.findall(r'name="exercise" value="([^"]+)"', picker.text)
            action = re.search(r'<form id="lti-picker" method="post" action="([^"]+)"', picker.text)
            assert action and len(offered) >= 2, offered
            answers.append(
                browser.post(
                    lti.tool + unescape(action.group(1)),
                    content=urlencode([("exercise", slug) for slug in offered[:3]]),
                    headers={"Origin": lti.tool, "Content-Type": "application/x-www-form-urlencoded"},
                )
            )
            if len(answers) == 1:
                assert _kept_failure(lti, lms) == platforms.TOKEN  # the failure kept, committed
    assert [a.status_code for a in answers] == [200, 200], answers[-1].text[-300:]
    assert lms.tokens == 2 and lms.writable[0], (lms.tokens, lms.writable)  # writable before the failure
    # while the tool waited on the LMS after a write (the line items, after the kept failure was
    # cleared), another request could write
    assert len(lms.writable) >= 3 and all(lms.writable), lms.writable
    assert _kept_failure(lti, lms) is None


# --- roster ---------------------------------------------------------------------------------------

ADMIN_ROLES = [
    "http://purl.imsglobal.org/vocab/lis/v2/system/person#Administrator",
    "http://purl.imsglobal.org/vocab/lis/v2/system/person#SysAdmin",
    "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator",
]


def test_a_hostile_roster_naming_the_real_lms_users_reaches_none_of_them(
    lti: Lti,
    evil: Scripted,
    course_l1: str,  # noqa: F811
) -> None:
    """The hostile LMS's roster lists, as instructors and administrators of its course, members
    whose ``user_id`` and email are those of the real LMS's instructor and learner: they are new
    accounts of the hostile LMS, learner accounts, and the real ones gain and lose nothing."""
    with lti.state.session_factory() as session:
        real = {
            row.sub: row.user_id
            for row in session.scalars(
                select(LtiUser)
                .join(LtiPlatform, LtiPlatform.id == LtiUser.platform_id)
                .where(LtiPlatform.issuer == lti.platform.url)
            )
        }
    assert {"sub-prof", "sub-ada"} <= set(real), sorted(real)
    members = [
        {"user_id": "h-prof-R11-roster", "name": "Prof", "roles": [STAFF], "status": "Active"},
        *(
            {
                "user_id": sub,
                "name": "Same person",
                "email": f"{sub}@example.org",
                "status": "Active",
                "roles": [STAFF, *ADMIN_ROLES],
            }
            for sub in ("sub-prof", "sub-ada")
        ),
    ]
    with lti.client() as browser:
        slug = _hostile_course(browser, lti, evil, "R11-roster")
        evil.roster = lambda _page: (json.dumps({"id": f"{evil.url}/nrps", "members": members}).encode(), "")
        try:
            assert roster_button(browser, lti, slug).status_code == 303
        finally:
            evil.roster = lambda _page: (b'{"members": []}', "")
    assert roster_outcome(lti, slug)[0] == "done"
    with lti.state.session_factory() as session:
        course = session.scalar(select(Course).where(Course.slug == slug))
        assert course is not None
        enrolled = set(session.scalars(select(Enrollment.user_id).where(Enrollment.course_id == course.id)))
        assert not enrolled & set(real.values()), "a real LMS account was put in the hostile course"
        made = set(
            session.scalars(
                select(LtiUser.user_id)
                .join(LtiPlatform, LtiPlatform.id == LtiUser.platform_id)
                .where(LtiPlatform.issuer == evil.issuer, LtiUser.sub.in_(["sub-prof", "sub-ada"]))
            )
        )
        assert len(made) == 2 and not made & set(real.values())
        roles = set(session.scalars(select(User.role).where(User.id.in_(made | set(real.values())))))
        assert roles == {Role.LEARNER}, roles
