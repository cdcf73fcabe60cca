"""Third white-box red team of LTI 1.3: attacks that worked, each a strict xfail that asserts
what a safe tool does (so it fails while the attack succeeds), and one sanity test.

The attacker plays the parts of the first two red teams (``tests/lti/test_redteam``): an
outsider, the independent test platform's users, and the hostile LMS (:class:`Hostile`) whose
launches and service answers the attacker writes, all over real HTTP to the real tool.

Attempts that failed (the tool held), one line each. White-box: each was checked against the
code it would have to get past (the line says what stops it); only the five xfails, the sanity
test and the race were driven over HTTP.

- alg ``none`` / HS256 with the platform's public key as secret: refused (header alg must be RS256, RSAKey only).
- ``kid`` naming an ``oct`` or EC key the platform publishes: refused (not an RSAKey).
- made-up ``kid`` bursts against a key set that answers 200: one fetch per 60 s (``jwks_miss_at``).
- duplicate ``kid`` in a key set: the first key only is tried; no confusion with the second.
- ``aud`` as a list holding our client id and another, no ``azp`` / a foreign ``azp``: refused.
- ``aud`` as a string that contains our client id as a substring: refused (exact match).
- ``iss`` as a list, or the other registered platform's issuer with this platform's state: refused.
- ``iat`` ``true`` (a bool is an int), ``iat`` a day old with ``exp`` a year ahead, ``iat`` in the future: refused.
- ``exp`` as a string / missing ``nonce`` / ``nonce`` of another login of the same browser: refused.
- state from platform A, token signed by platform B (both registered): refused (state binds the platform).
- replay of an accepted id_token with a fresh login (new state): refused (nonce bound to the login).
- replay of the same form (same state) twice, and racing two posts of one state: one wins.
- login with ``client_id`` of platform B and ``iss`` of platform A: Unknown LMS.
- deployment id registered for platform B used in a launch of platform A: Deployment not registered.
- a ``nonce`` / ``aud`` claim as a list holding the right value: accepted, but useless (the nonce is the login's).
- a ``return_url`` ``https://evil\\@lms/`` (WHATWG reads host evil): the answer page's ``form-action`` blocks it.
- message types LtiSubmissionReviewRequest / LtiDeepLinkingResponse posted as a launch: Unsupported message.
- learner-only launch as deep-linking request: Instructors only; Mentor / institution Student only: refused.
- role URIs ``.../membership/Learner#Instructor``, ``...institution/person#Instructor``: not staff.
- the same context id on two platforms, and on two deployments of one platform: two separate courses.
- a context label "default" / "rlhf-201" from the hostile LMS: a new slug (-2), the real course untouched.
- the hostile LMS's user with the real LMS's sub: a separate account (LtiUser keyed by platform).
- ``/dashboard/lti?course=`` of another LMS's course, and its roster/grades/auto forms: 404.
- the LTI page's forms without the CSRF token, or with ``Origin: null`` / another site: 403.
- the picker's form posted twice (one token), or after 30 minutes, or with ``Origin`` of another site: refused.
- custom ``exercise`` naming a slug not in the course, ``lineitem`` claim of another course's column: not opened.
- ``launch_presentation`` / context title / display name with ``<script>`` into the launch, picker and LTI pages: escaped.
- gradebook CSV export of an LMS display name ``=HYPERLINK(...)``: quoted.
- NRPS / AGS URLs on 169.254.169.254 or ``127.1`` (resolved first) from a public LMS: refused (``address_kind``).
- a 302 from the roster URL to loopback: not followed; a 5 MiB roster page: LMS error.
- a roster with 20,001 ``{}`` members on one page: LMS error (``MAX_ITEMS``), nothing changed.
- ``/lti/login`` with ``Sec-Fetch-Dest: iframe`` and 200 params: capped at 20 params of 2000 chars.
- ``/lti/launch`` with a 200 KiB form / 300 fields / a 64 KiB+ id_token: refused before parsing.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import StreamingResponse
from sqlalchemy import select

from server.lti import claims as c
from server.lti import services
from server.models import Course, Enrollment, LtiMember, LtiUser
from tests.lti.conftest import LEARNER, STAFF, TA, Lti, finished_request
from tests.lti.test_redteam import (  # noqa: F401  (module fixtures, used by name)
    Hostile,
    _hostile_course,
    _member,
    _page,
    evil,
    hostile,
    hostile_launch,
    people,
    roster_button,
    served_and_registered,
    signed_in,
)


def test_the_hostile_lms_signs_in_a_teaching_assistant_who_reaches_the_dashboard(lti: Lti, hostile: Hostile) -> None:
    """Not an attack: the harness works (a TA of the hostile LMS's course reaches its
    dashboard), so the xfails below fail for the attack's reason."""
    with lti.client() as prof:
        slug = _hostile_course(prof, lti, hostile, "HC3-sane")
    with lti.client() as ta:
        answer = hostile_launch(ta, lti, hostile, sub="h3-sane-ta", roles=[TA], context="HC3-sane")
        assert answer.status_code == 200, answer.text[-400:]
        assert signed_in(ta, lti, answer).status_code == 200
        assert ta.get(f"{lti.tool}/dashboard", params={"course": slug}).status_code == 200


# --- a member the LMS dropped keeps their powers -------------------------------------------------


def test_a_teaching_assistant_the_lms_removed_loses_the_course_dashboard(lti: Lti, evil: Hostile) -> None:
    context = "HC3-drop"
    with lti.client() as prof, lti.client() as ta:
        slug = _hostile_course(prof, lti, evil, context)
        answer = hostile_launch(ta, lti, evil, sub="h3-ta", roles=[TA], context=context, name="Tess TA")
        assert signed_in(ta, lti, answer).status_code == 200
        assert ta.get(f"{lti.tool}/dashboard", params={"course": slug}).status_code == 200  # staff while a TA
        # the LMS removes the TA from the course: listed Inactive (Canvas, Moodle), or no longer listed
        gone = {**_member("h3-ta", "Tess TA", [TA]), "status": "Inactive"}
        evil.roster = lambda _n: _page([_member(f"h-prof-{context}", "Prof", [STAFF]), gone], None, evil)
        assert roster_button(prof, lti, slug).status_code == 303
        with lti.state.session_factory() as session:
            ta_id = session.scalar(select(LtiUser.user_id).where(LtiUser.sub == "h3-ta"))
            status = session.scalar(select(LtiMember.status).where(LtiMember.user_id == ta_id))
            role = session.scalar(
                select(Enrollment.role).join(Course, Course.id == Enrollment.course_id).where(
                    Course.slug == slug, Enrollment.user_id == ta_id
                )
            )
        assert status == "dropped"  # the sync did see it
        learners = ta.get(f"{lti.tool}/dashboard", params={"course": slug})
    # a safe tool: the dropped TA no longer teaches the course (its learners' code, grades, overrides)
    assert role != "instructor" and learners.status_code == 404, (role, learners.status_code)


# --- LMS text into the administrator's terminal ------------------------------------------------------


def _learner_named(lti: Lti, evil: Hostile, context: str, sub: str, **claims: object) -> None:
    with lti.client() as prof:
        _hostile_course(prof, lti, evil, context)
    with lti.client() as learner:
        answer = hostile_launch(learner, lti, evil, sub=sub, roles=[LEARNER], context=context, **claims)
        assert answer.status_code == 200, answer.text[-400:]


def test_an_lms_display_name_that_reads_as_markup_is_listed_as_text(lti: Lti, evil: Hostile) -> None:
    # Canvas lets every learner set their own display name: no LMS administrator needed
    _learner_named(lti, evil, "HC3-markup", "h3-markup", name="[/x]Eve")
    done = lti.cli("users", "list")
    assert done.returncode == 0 and "[/x]Eve" in done.stdout, (done.returncode, (done.stdout + done.stderr)[-400:])


def test_terminal_escapes_in_an_lms_course_title_never_reach_the_terminal(lti: Lti, evil: Hostile) -> None:
    title = "Evil\x1b]0;owned\x1b\\\x1b[2J\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\"
    with lti.client() as prof:
        answer = hostile_launch(
            prof, lti, evil, sub="h3-ansi-prof", context="HC3-ansi",
            **{c.CONTEXT: {"id": "HC3-ansi", "title": title, "label": "hc3-ansi"}},
        )
        assert answer.status_code == 200, answer.text[-400:]
    done = lti.cli("courses", "list")
    assert done.returncode == 0 and "hc3-ansi" in done.stdout, (done.stdout + done.stderr)[-400:]
    # a safe CLI prints the title's text, never its ESC bytes (window title, screen clear, hyperlink)
    assert "\x1b" not in done.stdout, done.stdout.encode()[-400:]


# --- an LMS answering slowly -------------------------------------------------------------------------


@dataclass
class _Trickle(Hostile):
    """A hostile LMS whose roster arrives a byte at a time, each within the read timeout."""

    chunks_sent: list[int] = field(default_factory=list)
    gap: float = 0.3
    chunks: int = 15

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.get("/slow-nrps")
        def slow() -> StreamingResponse:
            async def drip() -> AsyncIterator[bytes]:
                for n in range(self.chunks):
                    self.chunks_sent.append(n)
                    yield b" "
                    await asyncio.sleep(self.gap)
                yield json.dumps({"members": []}).encode()

            return StreamingResponse(drip(), media_type="application/json")

        app.mount("/", super().app())
        return app


@pytest.fixture(scope="module")
def trickle(lti: Lti) -> Iterator[_Trickle]:
    yield from served_and_registered(lti, _Trickle)


def test_an_lms_answer_that_trickles_past_the_timeout_is_an_lms_error(
    lti: Lti, trickle: _Trickle, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the tool's own timeout (15 s) scaled down to 1 s, the LMS's pace with it: every byte comes
    # within the timeout, the whole answer takes 15 times as long
    monkeypatch.setattr(services, "TIMEOUT", httpx.Timeout(1.0, connect=1.0))
    with lti.client() as prof:
        answer = hostile_launch(
            prof, lti, trickle, sub="h3-slow-prof", context="HC3-slow",
            **{c.NRPS: {"context_memberships_url": f"{trickle.url}/slow-nrps", "service_versions": ["2.0"]}},
        )
        page = signed_in(prof, lti, answer)
        assert roster_button(prof, lti, str(page.url.params["course"])).status_code == 303
        state, said = finished_request(lti, str(page.url.params["course"]), "roster")
    # a safe tool gives the whole answer a deadline (the sync failed, the roster unchanged),
    # so the LMS could send only the bytes of about one timeout, not all of them
    assert state == "failed" and len(trickle.chunks_sent) < trickle.chunks, (state, said, len(trickle.chunks_sent))


# --- two first launches at once ----------------------------------------------------------------------


def _prepared_launch(browser: httpx.Client, lti: Lti, evil: Hostile, **claims: object) -> dict[str, str]:
    """The form of a hostile launch, its login done in ``browser`` (state cookie kept), not yet posted."""
    login = browser.get(
        f"{lti.tool}/lti/login",
        params={"iss": evil.issuer, "login_hint": "x", "target_link_uri": f"{lti.tool}/lti/launch"},
        follow_redirects=False,
    )
    query = parse_qs(urlsplit(login.headers["location"]).query)
    return {"id_token": evil.sign(evil.claims(query["nonce"][0], **claims)), "state": query["state"][0]}


def test_two_first_launches_at_once_both_get_a_page(lti: Lti, hostile: Hostile) -> None:
    # an instructor opening the new course's tool in two tabs (or two of its staff at once)
    statuses: list[tuple[int, int]] = []
    for n in range(8):
        browsers = [lti.client(), lti.client()]
        forms = [_prepared_launch(b, lti, hostile, sub=f"h3-race-{n}", context=f"HC3-race-{n}") for b in browsers]
        got = [0, 0]

        def post(i: int) -> None:
            got[i] = browsers[i].post(f"{lti.tool}/lti/launch", data=forms[i]).status_code

        threads = [threading.Thread(target=post, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for browser in browsers:
            browser.close()
        statuses.append((got[0], got[1]))
    # a safe tool: both are signed in (or one gets a page saying to launch again), never a 500
    assert all(status < 500 for pair in statuses for status in pair), statuses
