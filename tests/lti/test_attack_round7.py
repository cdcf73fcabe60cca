"""Seventh white-box red team of LTI 1.3: every attempt of this round, each a test over real HTTP
against the real tool (``tests/lti/conftest``), the independent test platform
(``tests/lti/platform``) and the hostile LMS of the first round (``tests/lti/test_redteam.Hostile``:
a second platform registered with the tool, whose launches and service answers the attacker
writes). An attack that worked is a strict xfail asserting what a safe tool does; an attack the
tool held is a plain test asserting that it holds. The races run on SQLite and PostgreSQL
(``tests/lti/test_races``'s forced interleaving).

Attacks that worked (strict xfails at first; fixed since, each now a plain test of the fix):

- a remote LMS registered by host name whose DNS also lists 127.0.0.1 for that name:
  ``services.service_address_kinds`` allows every kind among the token host's addresses, so
  loopback is granted and the roster button sends the tool (with a bearer token) to a service
  on the tool's own machine (plain http allowed there). Medium: blind SSRF to loopback.
- two deep-linking answers for one exercise at once on PostgreSQL: the second breaks the set
  entry's primary key (an exercise new to the course) or the column row's unique key (one
  already published): ``IntegrityError``, a 500 with a traceback. Low-medium (two staff, or two
  tabs, at the same moment).
- a launch signed with a 512-bit RSA key is accepted (no minimum key size). Low-medium: only
  where an LMS publishes such a key, then anyone who factors it signs in as any of its users.
- one roster sync reads and holds every page an LMS names, each up to the 4 MiB cap of one
  answer (``MAX_ITEMS`` counts members, not bytes): 100 pages, 400 MiB in memory per press of
  the button. Low-medium: a hostile LMS's instructor pressing it in parallel exhausts memory.
- an LMS's key set is cached whole (3.6 MB of junk keys kept in ``lti_platforms.jwks``, parsed
  at each launch of that LMS). Low: a storage and CPU cost a registered LMS imposes.

Attempts the tool held (plain tests): a spent launch replayed with its state's or token's
signature re-encoded (non-canonical base64); a login mixing one LMS's issuer with another's
client id; ``&redirect_uri=``/``&state=`` smuggled in ``login_hint`` and ``lti_message_hint``
(and the state cookie's ``SameSite=None; Secure; HttpOnly; Path=/lti/launch``); a hostile
LMS course with the real course's context id, title and label (a course of its own); a
hostile roster URL naming the real LMS's roster (its own token, refused by the real LMS); a
roster next link to the metadata address, ``::ffff:169.254.169.254``, plain http or 0.0.0.0;
a roster page over 4 MiB (one answer is capped); a key set answering 302 (not followed); a key marked
``"use": "enc"``; an id_token ``target_link_uri`` on another site (the redirect stays local);
a hostile user with the real instructor's email, name and LMS login (another account);
Learner sub-roles and legacy names that read as staff (a learner; no picker); the picker's
form posted cross-site with its cookie (Origin of the LMS, ``null``, a look-alike host);
two pickers at once on SQLite over HTTP; and, on SQLite and PostgreSQL, one person's first
launches into two courses at once and two LMS courses of one label opened at once.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import hashlib
import ipaddress
import json
import math
import re
import secrets
import socket
import string
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from joserfc.jwk import RSAKey
from sqlalchemy import Engine, event, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from server.courses.sets import publish
from server.db import make_session_factory, transaction
from server.lti import claims as c
from server.lti import deeplink, services
from server.lti.accounts import course_link, person, record_member
from server.lti.errors import LmsUnreachable
from server.lti.http import MAX_RESPONSE_BYTES
from server.lti.launch import Context, Launch, state_cookie_name
from server.lti.platforms import add_platform, kept_key_set
from server.models import (
    Course,
    Enrollment,
    LtiContext,
    LtiDeepLink,
    LtiLineItem,
    LtiMember,
    LtiPlatform,
    LtiUser,
    User,
    utcnow,
)
from tests.lti.conftest import LEARNER, STAFF, Lti, finished_request
from tests.lti.servers import free_port, launch
from tests.lti.test_races import DEPLOYMENT, Accepted, _accept, _count, _race, engine  # noqa: F401  (fixture)
from tests.lti.test_redteam import (  # noqa: F401  (module fixtures, used by name)
    HOSTILE_CLIENT,
    Hostile,
    _outside_address,
    _Served,
    _hostile_course,
    _member,
    course_l1,
    evil,
    hostile,
    hostile_launch,
    people,
    roster_button,
    served_and_registered,
    signed_in,
)
from tests.pg import pg_database, pg_url  # noqa: F401  (fixtures)
from tests.server.conftest import (  # noqa: F401  (fixtures)
    db_backend,
    pytest_generate_tests,
    served_database,
    settings,
)

_B64 = string.ascii_uppercase + string.ascii_lowercase + string.digits + "-_"
EXERCISE = "actor-loss"
PARTS = re.compile(r'href="(/lti/continue/[^"]+)"')


def _twin(compact: str) -> str:
    """The same JWS with its signature's last character re-encoded: the unused low bits of a
    base64url character changed, so a lenient decoder reads the very same signature bytes."""
    head, body, signature = compact.split(".")
    return ".".join([head, body, signature[:-1] + _B64[_B64.index(signature[-1]) ^ 1]])


def _course_role(lti: Lti, platform_url: str, sub: str, slug: str) -> str | None:
    with lti.state.session_factory() as session:
        platform_id = session.scalar(select(LtiPlatform.id).where(LtiPlatform.issuer == platform_url))
        user_id = session.scalar(select(LtiUser.user_id).where(LtiUser.platform_id == platform_id, LtiUser.sub == sub))
        course_id = session.scalar(select(Course.id).where(Course.slug == slug))
        row = session.get(Enrollment, (course_id, user_id)) if user_id is not None and course_id else None
        return row.role if row is not None else None


# --- replays: a re-encoded state or token --------------------------------------------------------


def test_a_launch_replayed_with_a_re_encoded_state_or_token_is_refused(lti: Lti, course_l1: str) -> None:
    """Mallory keeps her own accepted launch form (id_token, state) and posts it again with the
    state's signature re-encoded (another string, so another digest and another state cookie
    name; a lenient base64 decoder reads the same signature), her cookie set to match; then the
    id_token re-encoded with the spent state. Held: joserfc refuses non-canonical base64, and
    the nonce is unique whatever the state's text."""
    with lti.client() as browser:
        first = launch(browser, lti.platform, user="mal", context="L1")
        assert first.response.status_code == 200, first.response.text[-400:]
    state, token = first.form["state"], first.form["id_token"]
    twin_state, twin_token = _twin(state), _twin(token)
    assert twin_state != state and twin_token != token
    with httpx.Client(verify=str(lti.cert), follow_redirects=False, timeout=60) as attacker:
        again = attacker.post(
            first.action,
            data={"id_token": token, "state": twin_state},
            headers={"Cookie": f"{state_cookie_name(twin_state)}={twin_state}"},
        )
        token_again = attacker.post(
            first.action,
            data={"id_token": twin_token, "state": state},
            headers={"Cookie": f"{state_cookie_name(state)}={state}"},
        )
    for answer in (again, token_again):
        assert answer.status_code in (400, 401, 403), answer.status_code
        assert not PARTS.search(answer.text)


# --- a login naming one LMS with another's client id ---------------------------------------------


def test_a_login_mixing_one_lmss_issuer_with_anothers_client_id_is_refused(lti: Lti, hostile: Hostile) -> None:
    """The hostile LMS starts a login naming the real LMS's issuer with its own client id (and
    the reverse), hoping to get a state bound to one registration and keys from the other."""
    with httpx.Client(verify=str(lti.cert), follow_redirects=False, timeout=60) as browser:
        for issuer, client in ((lti.platform.url, HOSTILE_CLIENT), (hostile.issuer, "ppo-grader-client-1")):
            answer = browser.get(
                f"{lti.tool}/lti/login",
                params={"iss": issuer, "client_id": client, "login_hint": "x", "target_link_uri": f"{lti.tool}/lti/launch"},
            )
            assert answer.status_code == 400 and "Unknown LMS" in answer.text, (issuer, answer.status_code)
            assert not any(k.startswith("ppo_lti_state_") for k in answer.cookies), answer.cookies


def test_a_login_hint_cannot_add_or_replace_the_redirect_uri(lti: Lti) -> None:
    """``login_hint`` and ``lti_message_hint`` carrying ``&redirect_uri=...`` and
    ``&state=...``: passed on encoded, so the LMS sees one redirect_uri (the tool's) and the
    tool's own state; the state cookie is ``SameSite=None; Secure; HttpOnly`` on
    ``/lti/launch`` only."""
    evil = "x&redirect_uri=https://evil.example/lti/launch&state=forged&response_mode=query"
    with httpx.Client(verify=str(lti.cert), follow_redirects=False, timeout=60) as browser:
        answer = browser.get(
            f"{lti.tool}/lti/login",
            params={
                "iss": lti.platform.url,
                "login_hint": evil,
                "lti_message_hint": evil,
                "target_link_uri": f"{lti.tool}/lti/launch",
            },
        )
    assert answer.status_code == 302, answer.text[-300:]
    query = parse_qs(urlsplit(answer.headers["location"]).query)
    assert query["redirect_uri"] == [f"{lti.tool}/lti/launch"]
    assert query["response_mode"] == ["form_post"] and len(query["state"]) == 1 and query["state"] != ["forged"]
    assert query["login_hint"] == [evil] and query["lti_message_hint"] == [evil]
    cookie = answer.headers["set-cookie"].lower()
    assert all(part in cookie for part in ("samesite=none", "secure", "httponly", "path=/lti/launch")), cookie


# --- one LMS acting as another ----------------------------------------------------------------------


def test_a_hostile_lms_course_with_the_real_courses_id_and_label_is_a_course_of_its_own(
    lti: Lti, hostile: Hostile, course_l1: str
) -> None:
    """The hostile LMS launches its instructor from a context whose id, title and label are the
    real LMS's course L1's, hoping to land in (or relink) the real course ``rlhf-201``."""
    twin = {c.CONTEXT: {"id": "L1", "title": "RLHF in practice", "label": "RLHF-201"}}
    with lti.client() as browser:
        answer = hostile_launch(browser, lti, hostile, sub="r7-twin-prof", context="L1", **twin)
        assert answer.status_code == 200, answer.text[-400:]
        page = signed_in(browser, lti, answer)
        slug = str(page.url.params["course"])
        real = browser.get(f"{lti.tool}/dashboard", params={"course": course_l1}, follow_redirects=False)
    assert slug != course_l1 and slug.startswith("rlhf-201-")
    assert _course_role(lti, hostile.issuer, "r7-twin-prof", course_l1) is None
    assert real.status_code != 200, real.status_code
    with lti.state.session_factory() as session:
        link = session.scalar(select(LtiContext).join(Course, Course.id == LtiContext.course_id).where(Course.slug == course_l1))
        assert link is not None and str(link.memberships_url).startswith(lti.platform.url)


def test_a_hostile_roster_url_at_the_real_lms_reads_none_of_its_members(lti: Lti, evil: Hostile, course_l1: str) -> None:
    """The hostile LMS names the real LMS's roster of L1 as its course's roster: the tool calls
    it with the hostile LMS's own access token (never the real LMS's), which the real LMS
    refuses: nothing of L1's members reaches the hostile course."""
    nrps = {c.NRPS: {"context_memberships_url": f"{lti.platform.url}/nrps/L1", "service_versions": ["2.0"]}}
    with lti.client() as browser:
        answer = hostile_launch(browser, lti, evil, sub="h-prof-R7-NR", context="R7-NR", **nrps)
        assert answer.status_code == 200, answer.text[-400:]
        slug = str(signed_in(browser, lti, answer).url.params["course"])
        assert roster_button(browser, lti, slug).status_code == 303  # queued for the background job
    state, outcome = finished_request(lti, slug, "roster")
    assert state == "failed" and "Nothing was changed" in outcome, (state, outcome)
    with lti.state.session_factory() as session:
        platform_id = session.scalar(select(LtiPlatform.id).where(LtiPlatform.issuer == evil.issuer))
        copied = session.scalars(
            select(LtiUser.sub).where(LtiUser.platform_id == platform_id, LtiUser.sub.in_(["sub-prof", "sub-ada", "sub-mal"]))
        ).all()
    assert copied == []


# --- the roster: hostile pages ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    ["https://169.254.169.254/latest/meta-data/", "https://[::ffff:169.254.169.254]/", "http://169.254.169.254/", "https://0.0.0.0/"],
)
def test_a_roster_next_link_to_the_metadata_address_is_not_followed(lti: Lti, evil: Hostile, target: str) -> None:
    """The roster's first page is fine and its ``Link: rel="next"`` names the cloud metadata
    service (or 0.0.0.0): the whole sync is an LMS error, nothing of the first page applied."""
    context = "R7-NX-" + hashlib.sha256(target.encode()).hexdigest()[:8]
    with lti.client() as browser:
        slug = _hostile_course(browser, lti, evil, context)
        prof = _member(f"h-prof-{context}", "Prof", [STAFF])
        evil.roster = lambda _n: (
            json.dumps({"members": [prof, _member(f"r7-nx-{context}", "First page")]}).encode(),
            f'<{target}>; rel="next"',
        )
        assert roster_button(browser, lti, slug).status_code == 303  # queued for the background job
    state, outcome = finished_request(lti, slug, "roster")
    assert state == "failed" and "Nothing was changed" in outcome, (state, outcome)
    assert _course_role(lti, evil.issuer, f"r7-nx-{context}", slug) is None


def test_a_roster_page_over_the_size_cap_changes_nothing(lti: Lti, evil: Hostile) -> None:
    """One roster page past the 4 MiB cap (members, then padding in a member's field): an LMS
    error, nobody added."""
    with lti.client() as browser:
        slug = _hostile_course(browser, lti, evil, "R7-BIG")
        prof = _member("h-prof-R7-BIG", "Prof", [STAFF])
        big = json.dumps(
            {"members": [prof, {**_member("r7-big", "Big"), "pad": "x" * (MAX_RESPONSE_BYTES + 1024)}]}
        ).encode()
        evil.roster = lambda _n: (big, "")
        assert roster_button(browser, lti, slug).status_code == 303  # queued for the background job
    state, outcome = finished_request(lti, slug, "roster")
    assert state == "failed" and "MiB" in outcome, (state, outcome)
    assert _course_role(lti, evil.issuer, "r7-big", slug) is None


# --- the key set: redirects, a key for encryption, a bloated set -----------------------------------


@dataclass
class KeySetLms(Hostile):
    """A hostile LMS whose key set answers as ``mode`` says: ``redirect`` (302 to the real set),
    ``enc`` (its key marked for encryption), ``bloat`` (its key and 19 others of ~190 KB)."""

    mode: str = "plain"

    def _key(self) -> dict[str, Any]:
        return {**self.key.as_dict(private=False), "kid": self.key.kid, "alg": "RS256", "use": "sig"}

    def app(self) -> FastAPI:
        base = super().app()
        outer = FastAPI()

        @outer.middleware("http")
        async def record(request: Request, call_next: Any) -> Any:
            self.hits.append((request.method, request.url.path + "?" + request.url.query, dict(request.headers)))
            return await call_next(request)

        @outer.get("/jwks")
        def jwks() -> Response:
            if self.mode == "redirect":
                return RedirectResponse(f"{self.url}/jwks-real", status_code=302)
            if self.mode == "enc":
                return JSONResponse({"keys": [{**self._key(), "use": "enc"}]})
            if self.mode == "bloat":
                junk = [{"kty": "RSA", "kid": f"junk-{i}", "n": "A" * 190_000, "e": "AQAB"} for i in range(19)]
                return JSONResponse({"keys": [self._key(), *junk]})
            return JSONResponse({"keys": [self._key()]})

        @outer.get("/jwks-real")
        def jwks_real() -> Response:
            return JSONResponse({"keys": [self._key()]})

        outer.router.routes.extend(r for r in base.router.routes if getattr(r, "path", "") != "/jwks")
        return outer


def _key_set_lms(lti: Lti, mode: str) -> Iterator[KeySetLms]:
    for lms in served_and_registered(lti, KeySetLms):
        lms.mode = mode
        yield lms


@pytest.fixture
def redirecting(lti: Lti) -> Iterator[KeySetLms]:
    yield from _key_set_lms(lti, "redirect")


@pytest.fixture
def encrypting(lti: Lti) -> Iterator[KeySetLms]:
    yield from _key_set_lms(lti, "enc")


@pytest.fixture
def bloated(lti: Lti) -> Iterator[KeySetLms]:
    yield from _key_set_lms(lti, "bloat")


def test_a_key_set_that_redirects_is_not_followed(lti: Lti, redirecting: KeySetLms) -> None:
    """The LMS's key set URL answers 302 to another URL (where a valid set is): the tool takes
    keys only from the registered URL; the launch is refused, the other URL never fetched."""
    with lti.client() as browser:
        answer = hostile_launch(browser, lti, redirecting, sub="r7-redirect", context="R7-RD")
    assert answer.status_code == 502 and "keys could not be read" in answer.text, answer.status_code
    assert not any(path.startswith("/jwks-real") for _m, path, _h in redirecting.hits)


def test_a_key_published_for_encryption_verifies_no_launch(lti: Lti, encrypting: KeySetLms) -> None:
    """The LMS's only key is marked ``"use": "enc"``: no launch signed with it is accepted."""
    with lti.client() as browser:
        answer = hostile_launch(browser, lti, encrypting, sub="r7-enc", context="R7-ENC")
    assert answer.status_code in (400, 401), answer.status_code
    assert not PARTS.search(answer.text)


def test_the_key_set_kept_for_an_lms_is_capped(lti: Lti, bloated: KeySetLms) -> None:
    """A registered LMS (or anyone who can make it refresh: an unknown ``kid`` once a minute)
    publishes its real key and 19 others with a 190 KB modulus each (3.6 MB). The tool keeps
    what it fetched, whole, in ``lti_platforms.jwks``, and reads it back at every launch of that
    LMS. Secure: only what a launch can use is kept (RSA public members of at most a few
    keys), a small bounded text whatever the LMS answers."""
    with lti.client() as browser:
        answer = hostile_launch(browser, lti, bloated, sub="r7-bloat", context="R7-BL")
    assert answer.status_code == 200, answer.text[-400:]  # the real key still verifies
    with lti.state.session_factory() as session:
        kept = session.scalar(select(LtiPlatform.jwks).where(LtiPlatform.issuer == bloated.issuer)) or ""
    assert len(kept) <= 64 * 1024, len(kept)
    assert [k["kid"] for k in json.loads(kept)["keys"]] == [bloated.key.kid]


# --- open redirects, account linking, role escalation -------------------------------------------------


def test_a_launch_whose_target_link_uri_names_another_site_signs_in_on_the_tool(lti: Lti, hostile: Hostile) -> None:
    """The id_token's ``target_link_uri`` claim (never checked against the login's) names
    another site: the sign-in link and its redirect stay on the tool."""
    with lti.client() as staff:
        _hostile_course(staff, lti, hostile, "R7-TL")
    claims = {c.TARGET_LINK_URI: "https://evil.example/steal?next=//evil.example"}
    with httpx.Client(verify=str(lti.cert), follow_redirects=False, timeout=60) as browser:
        answer = hostile_launch(browser, lti, hostile, sub="r7-tl", roles=[LEARNER], context="R7-TL", **claims)
        assert answer.status_code == 200, answer.text[-400:]
        found = PARTS.search(answer.text)
        assert found and "evil" not in answer.text
        done = browser.get(lti.tool + unescape(found.group(1)))
    assert done.status_code == 303 and done.headers["location"].startswith("/"), done.headers.get("location")
    assert not done.headers["location"].startswith("//") and "evil" not in done.headers["location"]


def test_a_hostile_user_with_a_real_users_email_and_login_gets_an_account_of_their_own(
    lti: Lti, hostile: Hostile, course_l1: str
) -> None:
    """The hostile LMS launches someone with the real instructor's email, name and LMS login
    (and ``email_verified``): a new account; the real one's account, email and course keep."""
    extra = {"email": "grace@example.edu", "email_verified": True, "preferred_username": "ghopper", "name": "Grace Hopper"}
    with lti.client() as browser:
        answer = hostile_launch(browser, lti, hostile, sub="r7-grace", context="R7-EM", **extra)
        assert answer.status_code == 200, answer.text[-400:]
        signed_in(browser, lti, answer)
    with lti.state.session_factory() as session:
        real = session.scalar(select(LtiUser).join(LtiPlatform).where(LtiPlatform.issuer == lti.platform.url, LtiUser.sub == "sub-prof"))
        fake = session.scalar(select(LtiUser).join(LtiPlatform).where(LtiPlatform.issuer == hostile.issuer, LtiUser.sub == "r7-grace"))
        assert real is not None and fake is not None and real.user_id != fake.user_id
        assert real.email == "grace@example.edu"
        names = {session.get(User, real.user_id).name, session.get(User, fake.user_id).name}  # type: ignore[union-attr]
    assert len(names) == 2
    assert _course_role(lti, hostile.issuer, "r7-grace", course_l1) is None
    assert _course_role(lti, lti.platform.url, "sub-prof", course_l1) == "instructor"


def test_learner_sub_roles_and_legacy_names_that_read_as_staff_leave_a_learner(lti: Lti, hostile: Hostile) -> None:
    """A learner whose roles add a Learner sub-role named ``Instructor``, the Instructor URI
    with a trailing space or another case, and LTI 1.1's ``urn:lti:role:ims/lis/Instructor``:
    a learner of the course (no dashboard), and no picker from a deep-linking launch."""
    with lti.client() as staff:
        slug = _hostile_course(staff, lti, hostile, "R7-RO")
    roles = [
        LEARNER,
        "http://purl.imsglobal.org/vocab/lis/v2/membership/Learner#Instructor",
        STAFF + " ",
        STAFF.upper(),
        "urn:lti:role:ims/lis/Instructor",
        "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Instructor",
    ]
    with lti.client() as browser:
        answer = hostile_launch(browser, lti, hostile, sub="r7-ro", roles=roles, context="R7-RO")
        assert answer.status_code == 200, answer.text[-400:]
        signed_in(browser, lti, answer)
        board = browser.get(f"{lti.tool}/dashboard", params={"course": slug}, follow_redirects=False)
        picker = hostile_launch(
            browser,
            lti,
            hostile,
            sub="r7-ro",
            roles=roles,
            context="R7-RO",
            **{
                c.MESSAGE_TYPE: c.DEEP_LINKING_REQUEST,
                c.DEEP_LINKING_SETTINGS: {"deep_link_return_url": f"{hostile.url}/dl", "accept_types": ["ltiResourceLink"]},
            },
        )
    assert _course_role(lti, hostile.issuer, "r7-ro", slug) == "learner"
    assert board.status_code in (303, 404) and "/dashboard/learners/" in board.headers.get("location", "/dashboard/learners/")
    assert picker.status_code == 403 and "Instructors only" in picker.text, picker.status_code


# --- deep linking: CSRF on the picker ---------------------------------------------------------------


def test_a_picker_form_posted_from_another_site_is_refused_and_left_unspent(lti: Lti, course_l1: str) -> None:
    """The instructor has the picker open (its cookie in their browser, SameSite=None so it
    rides on cross-site posts); a page of another site posts the picker's form (the LMS's
    origin, or ``null`` from a sandboxed frame) with exercises of its choosing: refused,
    nothing published, the picker left for its instructor."""
    with lti.client() as browser:
        picker = launch(browser, lti.platform, user="prof", context="L1", message="deeplink").response
        assert picker.status_code == 200, picker.text[-400:]
        action = unescape(re.search(r'<form id="lti-picker" method="post" action="([^"]+)"', picker.text).group(1))  # type: ignore[union-attr]
        answers = [
            browser.post(
                lti.tool + action,
                content="exercise=actor-loss&whole-set=1",
                headers={"Origin": origin, "Content-Type": "application/x-www-form-urlencoded"},
            )
            for origin in (lti.platform.url, "null", "https://localhost.evil.example")
        ]
    assert [a.status_code for a in answers] == [403, 403, 403]
    token = action.rsplit("/", 1)[1]
    with lti.state.session_factory() as session:
        row = session.scalar(select(LtiDeepLink).where(LtiDeepLink.token == token))
        assert row is not None and row.used_at is None


# --- PostgreSQL (and SQLite) races of first launches ---------------------------------------------------


def _accept_labelled(session: Session, sub: str, context: str, label: str) -> Accepted:
    platform = session.scalar(select(LtiPlatform))
    assert platform is not None
    checked = Launch(
        platform=platform,
        message_type=c.RESOURCE_LINK_REQUEST,
        deployment_id=DEPLOYMENT,
        sub=sub,
        name=f"Prof {sub}",
        email=None,
        username=None,
        roles=(STAFF,),
        context=Context(id=context, title=f"Course {context}", label=label),
        resource_link_id="rl-1",
    )
    link = course_link(session, checked, True)
    user = person(session, platform.id, sub, name=checked.name)
    record_member(session, link, user, checked.roles)
    return Accepted(link.id, user.id, user.name)


def test_one_persons_first_launches_into_two_courses_at_once_make_one_account(engine: Engine) -> None:  # noqa: F811
    """Ada's first launches from two LMS courses at once (two tabs): one account, a member of
    both, never a second account for the same ``sub``."""
    with Session(engine) as session:
        _accept(session, "prof", "R7A", name="Grace Hopper")
        _accept(session, "prof", "R7B", name="Grace Hopper")
        session.commit()
    a, b = _race(
        engine,
        lambda s: _accept(s, "ada", "R7A", roles=(LEARNER,)),
        lambda s: _accept(s, "ada", "R7B", roles=(LEARNER,)),
    )
    assert a.user_id == b.user_id and a.link_id != b.link_id
    with Session(engine) as session:
        assert session.scalars(select(LtiUser.user_id).where(LtiUser.sub == "ada")).all() == [a.user_id]
        assert len(session.scalars(select(User.id).where(User.name.like("ada%"))).all()) == 1
        assert len(session.scalars(select(LtiMember.context_id).where(LtiMember.user_id == a.user_id)).all()) == 2


def test_two_lms_courses_of_one_label_first_opened_at_once_get_a_course_each(engine: Engine) -> None:  # noqa: F811
    """Two LMS courses with the same label opened for the first time at once by their own
    instructors: two courses (the second slug numbered), each link to its own, never one LMS
    course landing in the other's."""
    a, b = _race(
        engine,
        lambda s: _accept_labelled(s, "p1", "R7X1", "shared-label"),
        lambda s: _accept_labelled(s, "p2", "R7X2", "shared-label"),
    )
    assert a.link_id != b.link_id and a.user_id != b.user_id
    with Session(engine) as session:
        links = {row.context_id: row.course_id for row in session.scalars(select(LtiContext))}
        slugs = {session.get(Course, course_id).slug for course_id in links.values()}  # type: ignore[union-attr]
        teachers = {
            context: session.scalars(select(Enrollment.user_id).where(Enrollment.course_id == course)).all()
            for context, course in links.items()
        }
    assert len(set(links.values())) == 2 and slugs == {"shared-label", "shared-label-2"}
    assert teachers == {"R7X1": [a.user_id], "R7X2": [b.user_id]}
    assert _count(engine, LtiContext) == 2


# --- SSRF: a two-faced host name unlocks this machine ---------------------------------------------------

TWO_FACED = "lms.two-faced.test"


def _named_certificate(folder: Path, name: str, ips: list[str]) -> tuple[Path, Path]:
    """A self-signed CA certificate for ``name`` (and ``ips``): the hostile LMS's, trusted by the
    tool as a public CA's would be."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    sans: list[x509.GeneralName] = [x509.DNSName(name)] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=7))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "two-faced-cert.pem", folder / "two-faced-key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_file, key_file


@dataclass
class TwoFaced:
    """The hostile LMS, the internal service, and the addresses the LMS's DNS lists for its name."""

    evil: Hostile
    internal_port: int
    internal_hits: list[str]
    faces: list[str]


@pytest.fixture
def two_faced(lti: Lti, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TwoFaced]:
    """A hostile LMS registered by name (``https://lms.two-faced.test:<port>``, as an
    administrator registers a remote LMS), served on this machine's outside address; its DNS
    (the LMS's own zone: here a resolver answering for that one name) lists that address and
    127.0.0.1. An internal https service listens on loopback."""
    outside = _outside_address()
    if outside is None:  # as tests/lti/test_redteam's remote LMS: it needs an address the tool sees as remote
        pytest.skip("this machine has no address but loopback")
    cert, key = _named_certificate(tmp_path, TWO_FACED, [outside, "127.0.0.1"])
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    real_getaddrinfo = socket.getaddrinfo
    faces = [outside, "127.0.0.1"]

    def resolver(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == TWO_FACED:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (face, port or 0)) for face in faces]
        return real_getaddrinfo(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    port, internal_port = free_port(), free_port()
    evil = Hostile(f"https://{TWO_FACED}:{port}")
    hits: list[str] = []
    internal = FastAPI()

    @internal.api_route("/{rest:path}", methods=["GET", "POST"])
    def secret(rest: str, request: Request) -> Response:
        hits.append(f"{request.method} /{rest} {request.headers.get('authorization', '')}")
        return JSONResponse({"members": []})

    with _Served(evil.app(), outside, port, cert, key), _Served(internal, "127.0.0.1", internal_port, cert, key):
        with transaction(lti.state.session_factory) as session:
            add_platform(session, evil.registration())
        yield TwoFaced(evil, internal_port, hits, faces)


def _two_faced_roster(lti: Lti, two_faced: TwoFaced, context: str) -> None:
    url = f"https://127.0.0.1:{two_faced.internal_port}/internal/admin"
    with lti.client() as browser:
        answer = hostile_launch(
            browser,
            lti,
            two_faced.evil,
            sub="r7-two-faced",
            context=context,
            **{c.NRPS: {"context_memberships_url": url, "service_versions": ["2.0"]}},
        )
        assert answer.status_code == 200, answer.text[-400:]
        page = signed_in(browser, lti, answer)
        roster_button(browser, lti, str(page.url.params["course"]))
    assert any(path.startswith("/token") for _m, path, _h in two_faced.evil.hits)  # the LMS was reached


def test_a_remote_lms_registered_by_name_cannot_reach_this_machine(lti: Lti, two_faced: TwoFaced) -> None:
    """Not an attack: the control of the (fixed) attack below. The same LMS, its name resolving to its
    outside address alone: its roster on 127.0.0.1 is refused, the internal service never called."""
    two_faced.faces[:] = two_faced.faces[:1]
    _two_faced_roster(lti, two_faced, "R7-1F")
    assert two_faced.internal_hits == []


def test_a_remote_lms_whose_name_also_resolves_to_loopback_cannot_reach_this_machine(
    lti: Lti, two_faced: TwoFaced
) -> None:
    """The hostile LMS is remote: registered by a host name, reached at its outside address.
    Its DNS lists one more address for that name, 127.0.0.1. ``service_address_kinds`` takes
    the kinds of *every* address of the token host and allows each, so loopback is allowed for
    all of this LMS's service URLs; the token call itself still reaches the LMS (the outside
    address comes first, and a refused connection falls through to the next). The launch then
    names a roster on 127.0.0.1: the roster button sends the tool (with the LMS's bearer token)
    to a service on the tool's own machine, plain http included (allowed on loopback). Secure:
    loopback is this LMS's only if every address of its registered host is loopback (it is on
    this machine), so the internal service is never called."""
    _two_faced_roster(lti, two_faced, "R7-2F")
    assert two_faced.internal_hits == []


# --- deep linking: two answers for one new exercise at once ---------------------------------------------


@dataclass
class GatedLookups(Hostile):
    """A hostile LMS whose line-items list answers only once ``gate`` lookups are waiting (two
    pickers sent at once both ask whether the exercise has a column, before either records)."""

    gate: int = 2
    lookups: int = 0

    def app(self) -> FastAPI:
        app = super().app()

        @app.middleware("http")
        async def gated(request: Request, call_next: Any) -> Any:
            if request.method == "GET" and request.url.path == "/ags/lineitems":
                self.lookups += 1
                for _ in range(600):  # until the other picker's lookup has come too (at most 30 s)
                    if self.lookups >= self.gate:
                        break
                    await asyncio.sleep(0.05)
            return await call_next(request)

        return app


@pytest.fixture
def gated(lti: Lti) -> Iterator[GatedLookups]:
    yield from served_and_registered(lti, GatedLookups)


def _picker(browser: httpx.Client, lti: Lti, lms: Hostile, sub: str, context: str) -> str:
    answer = hostile_launch(
        browser,
        lti,
        lms,
        sub=sub,
        context=context,
        **{
            c.MESSAGE_TYPE: c.DEEP_LINKING_REQUEST,
            c.DEEP_LINKING_SETTINGS: {"deep_link_return_url": f"{lms.url}/dl", "accept_types": ["ltiResourceLink"]},
        },
    )
    assert answer.status_code == 200, answer.text[-400:]
    return unescape(re.search(r'<form id="lti-picker" method="post" action="([^"]+)"', answer.text).group(1))  # type: ignore[union-attr]


def _line_items_asked(answer: httpx.Response) -> int:
    found = re.search(r'name="JWT" value="([^"]+)"', answer.text)
    assert found, answer.text[-400:]
    body = unescape(found.group(1)).split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    return sum("lineItem" in item for item in claims[c.CONTENT_ITEMS])


def test_two_pickers_sent_at_once_for_one_new_exercise_ask_for_one_column(lti: Lti, gated: GatedLookups) -> None:
    """Two of the course's staff (or one instructor in two tabs) pick the same exercise, new to
    the course, at the same moment, both asking the LMS about its column before either records
    anything. Held on SQLite (the ``lti`` fixture's database): the second answer's writes wait
    for the first's, and it reads the first's "asked" row again after its own update, so one
    ``lineItem`` is asked for in all and both get their answer page. PostgreSQL: the race below."""
    with lti.client() as one, lti.client() as two:
        _hostile_course(one, lti, gated, "R7-DL2")
        first = _picker(one, lti, gated, "h-prof-R7-DL2", "R7-DL2")
        second = _picker(two, lti, gated, "r7-dl2-ta", "R7-DL2")
        answers: dict[str, httpx.Response] = {}

        def send(name: str, browser: httpx.Client, action: str) -> None:
            answers[name] = browser.post(
                lti.tool + action,
                content="exercise=actor-loss",
                headers={"Origin": lti.tool, "Content-Type": "application/x-www-form-urlencoded"},
            )

        threads = [
            threading.Thread(target=send, args=("one", one, first)),
            threading.Thread(target=send, args=("two", two, second)),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    assert gated.lookups == 2  # both asked the LMS before either recorded anything
    statuses = sorted(a.status_code for a in answers.values())
    assert all(s < 500 for s in statuses), statuses
    asked = sum(_line_items_asked(a) for a in answers.values() if a.status_code == 200)
    assert asked <= 1, asked


def _race_at(engine: Engine, first: Any, second: Any, kinds: tuple[str, ...]) -> tuple[Any, Any]:
    """``first`` done, uncommitted; ``second`` in a thread, ``first`` committed just before the
    second's first statement of ``kinds`` (``test_races._race``, any statement kind); both results
    (the second's exception re-raised)."""
    sessions = make_session_factory(engine)
    reached, committed = threading.Event(), threading.Event()
    racer: dict[str, Any] = {}

    def hook(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if threading.get_ident() == racer.get("thread") and statement.lstrip().upper().startswith(kinds):
            if not reached.is_set():
                reached.set()
                assert committed.wait(30), "the first never committed"

    def run() -> None:
        racer["thread"] = threading.get_ident()
        try:
            with sessions() as session:
                racer["result"] = second(session)
                session.commit()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            racer["error"] = exc

    event.listen(engine, "before_cursor_execute", hook)
    try:
        with sessions() as session_a:
            a = first(session_a)
            thread = threading.Thread(target=run)
            thread.start()
            got_there = reached.wait(30)
            session_a.commit()
            committed.set()
            thread.join(60)
        assert got_there, "the second made no such statement"
    finally:
        event.remove(engine, "before_cursor_execute", hook)
    if "error" in racer:
        raise racer["error"]
    return a, racer["result"]


@pytest.mark.parametrize("published", [False, True], ids=["new-exercise", "published-exercise"])
def test_two_deep_linking_answers_for_one_new_exercise_at_once_ask_for_one_column(
    engine: Engine,  # noqa: F811
    db_backend: str,  # noqa: F811
    published: bool,
) -> None:
    """Two pickers of one course (two of its staff, or two tabs) answered at once for the same
    exercise, new to the course: ``deeplink.answer`` reads what is remembered (nothing), then
    adds its "asked" row (``LtiLineItem``, unique on course and exercise) and publishes. The
    first answer is done but not committed when the second reads; it commits just before the
    second's first insert. On PostgreSQL the second then breaks a unique key (the set entry's
    or the column row's): an ``IntegrityError``, a 500 with a traceback over HTTP, the second
    instructor's choice lost. Secure: the second answer ends with a page (its items, the
    column asked for once in all) or a named refusal, never an ``IntegrityError``. On SQLite
    writers are serialized and the race cannot happen (the first write waits). ``published``:
    the exercise is in the course's set already (no column yet), so the second's first insert
    is the column row's, whose unique key it breaks in the same way."""
    secret = b"r7-secret-" + b"s" * 32
    with Session(engine) as session:
        made = _accept(session, "prof", "R7DL")
        if published:
            link = session.get(LtiContext, made.link_id)
            assert link is not None
            publish(session, session.get(Course, link.course_id), EXERCISE, actor="test")  # type: ignore[arg-type]
        now = utcnow()
        ids = []
        for n in range(2):
            row = LtiDeepLink(
                token=f"r7-picker-{n}",
                context_id=made.link_id,
                user_id=made.user_id,
                return_url="https://lms.race.example/dl",
                data=None,
                deployment_id=DEPLOYMENT,
                accept_multiple=True,
                created_at=now,
                expires_at=now + datetime.timedelta(minutes=30),
            )
            session.add(row)
            session.flush()
            ids.append(row.id)
        session.commit()

    def answer_of(n: int) -> Any:
        def run(session: Session) -> deeplink.Answer:
            row = session.get(LtiDeepLink, ids[n])
            assert row is not None
            return deeplink.answer(session, secret, row, [EXERCISE], "https://tool.example/lti/launch")

        return run

    kinds = ("INSERT",) if db_backend == "postgres" else ("INSERT", "UPDATE", "DELETE")
    a, b = _race_at(engine, answer_of(0), answer_of(1), kinds)
    assert (a.items, b.items) == (1, 1)
    assert a.line_items_asked + b.line_items_asked == 1
    assert _count(engine, LtiLineItem) == 1


# --- the key set: a key anyone can factor ---------------------------------------------------------------


def _weak_key(bits: int = 512) -> RSAKey:
    """An RSA key of ``bits`` bits (``cryptography`` makes none under 1024; built from two
    primes here, as an old or misconfigured LMS may have one)."""

    def prime(size: int) -> int:
        while True:
            n = secrets.randbits(size) | (3 << (size - 2)) | 1
            if all(pow(a, n - 1, n) == 1 for a in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)):
                return n

    e = 65537
    while True:
        p, q = prime(bits // 2), prime(bits // 2)
        phi = (p - 1) * (q - 1)
        if p != q and math.gcd(e, phi) == 1:
            break
    d = pow(e, -1, phi)
    numbers = rsa.RSAPrivateNumbers(p, q, d, d % (p - 1), d % (q - 1), pow(q, -1, p), rsa.RSAPublicNumbers(e, p * q))
    return RSAKey.import_key(numbers.private_key(), {"kid": f"weak-{bits}"})


@dataclass
class WeakKeyLms(Hostile):
    """A hostile (or old, misconfigured) LMS that signs with a 512-bit RSA key."""

    key: RSAKey = field(default_factory=_weak_key)


@pytest.fixture
def weak(lti: Lti) -> Iterator[WeakKeyLms]:
    yield from served_and_registered(lti, WeakKeyLms)


def test_a_launch_signed_with_a_512_bit_key_is_refused(lti: Lti, weak: WeakKeyLms) -> None:
    """An LMS publishes a 512-bit RSA key (an old install, a misconfigured key pair). Anyone who
    factors its public modulus (hours on rented machines) signs launches as any of its users,
    instructors included. ``platform_key`` takes any RSA key of the set (joserfc only warns).
    Secure: keys under 2048 bits verify nothing (the launch is refused with a page that says
    the LMS's key is too weak)."""
    assert weak.key.as_dict(private=False)["n"] and len(base64.urlsafe_b64decode(weak.key.as_dict()["n"] + "==")) == 64
    with lti.client() as browser:
        answer = hostile_launch(browser, lti, weak, sub="r7-weak", context="R7-WK")
    assert answer.status_code in (400, 401), answer.status_code
    assert not PARTS.search(answer.text)
    assert "Signing key refused" in answer.text and "2048 bits" in answer.text, answer.text[-400:]


def test_a_key_set_keeps_only_keys_that_can_verify_a_launch() -> None:
    """Not an attack: what is kept of a key set (``platforms.kept_key_set``). A strong RSA key
    keeps its public members only; a 512-bit key, an EC key (any curve: launches are RS256) and
    a key for encryption are refused by kid (a launch they sign is refused by name); a set of
    more than 20 keys is refused whole, nothing kept."""
    strong = {**RSAKey.generate_key(2048).as_dict(private=False), "kid": "strong", "x5c": ["x" * 5000]}
    weak = {**_weak_key().as_dict(private=False), "kid": "weak"}
    ec = {"kty": "EC", "crv": "secp256k1", "kid": "ec", "x": "AA", "y": "AA"}
    enc = {**strong, "kid": "enc", "use": "enc"}
    kept = kept_key_set({"keys": [strong, weak, ec, enc, "junk"]}, "the key set")
    assert [k["kid"] for k in kept["keys"]] == ["strong"] and "x5c" not in kept["keys"][0]
    assert set(kept["refused"]) == {"weak", "ec", "enc"} and "512 bits" in kept["refused"]["weak"]
    with pytest.raises(LmsUnreachable, match="more than 20 keys"):
        kept_key_set({"keys": [strong] * 21}, "the key set")


# --- the roster: many big pages ------------------------------------------------------------------------


def test_a_roster_sync_reads_a_bounded_amount_in_all(lti: Lti, evil: Hostile) -> None:
    """A hostile LMS (its instructor pressing "Sync the roster", again and again in parallel)
    answers pages each under the 4 MiB cap of one answer (a member, then 3.5 MB of padding in
    one of its fields, which the tool keeps with the member until the sync ends), each naming
    the next: twelve pages, 42 MB here, up to 100 pages (400 MiB held per sync) in all.
    ``MAX_ITEMS`` counts members, not bytes. Secure: one sync reads at most a bounded total
    (32 MiB here: a course of 20,000 members is a few MiB), then stops with an LMS error."""
    pages = 12
    served: list[int] = []
    prof = _member("h-prof-R7-MANY", "Prof", [STAFF])
    body = json.dumps({"members": [prof, {**_member("r7-pad", "Pad"), "pad": "x" * 3_500_000}]}).encode()
    assert MAX_RESPONSE_BYTES > len(body) > 3_400_000

    def roster(n: int) -> tuple[bytes, str]:
        served.append(len(body))
        return body, (f'<{evil.url}/nrps?page={n + 1}>; rel="next"' if n < pages - 1 else "")

    with lti.client() as browser:
        slug = _hostile_course(browser, lti, evil, "R7-MANY")
        evil.roster = roster
        roster_button(browser, lti, slug)
    assert sum(served) <= 32 * 2**20, (len(served), sum(served))
    assert _course_role(lti, evil.issuer, "r7-pad", slug) is None  # nothing of the pages read applied


def test_a_paged_read_past_its_time_budget_takes_nothing(lti: Lti, evil: Hostile, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not an attack: the other bound of one paged read, its time in all (60 s: each exchange
    has its own deadline, but a hundred pages of 14 s each would hold the sync for over 20
    minutes). With no time left the roster is not asked for, nobody is added."""
    served: list[int] = []
    prof = _member("h-prof-R7-SLOW", "Prof", [STAFF])

    def roster(n: int) -> tuple[bytes, str]:
        served.append(n)
        return json.dumps({"members": [prof, _member("r7-slow", "Slow")]}).encode(), ""

    with lti.client() as browser:
        slug = _hostile_course(browser, lti, evil, "R7-SLOW")
        evil.roster = roster
        monkeypatch.setattr(services, "MAX_PAGED_SECONDS", 0.0)
        roster_button(browser, lti, slug)
    assert served == []
    assert _course_role(lti, evil.issuer, "r7-slow", slug) is None
