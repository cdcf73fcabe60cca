"""Ninth white-box red team of LTI 1.3: every attempt of this round that is cheap to drive, each
a test over real HTTP against the real tool (``tests/lti/conftest``), the independent test
platform (``tests/lti/platform``) and hostile LMSs (``tests/lti/test_redteam.Hostile``: a
platform registered with the tool as an administrator would, whose launches, key set and
service answers the attacker writes). An attack that worked is a strict xfail asserting what a
safe tool does; an attack the tool held is a plain test asserting that it holds.

Attacks that worked (strict xfails when found; fixed since, now plain tests), most severe first:

- a platform's key set is cached with no age limit (``jwks_fetched_at`` is written, never
  read): a key the LMS has taken out of its set (rotated away after a leak) keeps verifying
  launches, as any of its users, for as long as no launch names a key id the cache lacks,
  however old the cache. Medium: a leaked LMS key outlives its revocation.
- an LMS that rotates its key under the same ``kid`` (a fixed key id, as some LMSs and
  key-management setups publish) is locked out: a launch signed by the new key is "Signature
  does not verify", and a bad signature never refreshes the set, so every launch of that LMS
  fails until an administrator edits the database. Medium-low: availability of a whole LMS.
- a deep-linking request whose ``data`` holds a lone surrogate (``"\\ud83d"``, valid JSON:
  what an LMS that cuts a title between the halves of an emoji sends) is accepted and stored,
  then the picker's answer dies on ``UnicodeEncodeError`` signing it back (joserfc encodes
  claims with ``ensure_ascii=False``): a 500 with a traceback, not a page that says why.
  Low-medium.
- a deep-linking request whose ``accept_types`` holds no ``ltiResourceLink`` (the LMS asks for
  a file or HTML here) is answered with resource links anyway, and the exercises are published
  in the course: ``accept_types`` is read and never used (Deep Linking 2.0 §4.4.1). Low: the
  LMS refuses or misplaces the answer; nothing crosses a trust boundary.
- the picker offers, and the deep-linking answer publishes, a pack exercise that never passed
  ``exercises verify``: ``publish`` refuses it with ``ExerciseNotVerified``, which escapes the
  LTI page as the API's JSON 409 (no LTI page, the LMS never gets its answer; the JSON names
  the pack's folder on the server to the LMS's instructor). Low.
- a deep-linking request whose ``data`` holds ``NaN`` (Python's ``json`` reads it in the
  id_token, which is not JSON either) is given back as ``NaN`` in the signed answer: a JWT whose
  claims are not JSON (RFC 7519), which a strict LMS cannot read. Low.

Attempts the tool held (plain tests below): a hostile LMS's roster listing the real LMS's
user ids (its own accounts; the real ones stay out of its course); a staff role past the 50
roles read (a learner, no dashboard); a picker opened as staff and sent after the LMS launched
the same person as a learner (refused); markup and quotes in a framed login's parameters
(escaped); after an LMS's key rotation, a real launch with the new key refreshes the set once
and a launch signed by the removed key is refused with no further fetch.

Every claim at its cap in four-byte characters, through a launch, a deep-linking request and
a roster sync, is stored on SQLite and PostgreSQL (each cap is at most its column, so no
"value too long" on PostgreSQL only).

Checked by reading the code (or a line of Python), not driven: a key set's RSA key with
``e`` 1 or 2 (``cryptography`` refuses it: "Unusable signing key", no forgery); an LMS failure
kept on a platform or a task is cut to its column; the line
item's ``/scores`` URL keeps a query (Moodle's ``?type_id=``); a second registration sharing an
issuer (Canvas cloud) needs the client id at login and keeps users and courses per
registration; a context label in full-width or other non-ASCII letters becomes ``lms-course``
(never another course's slug); ``return_url`` of a login is never redirected to.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from datetime import timedelta
from html import unescape
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlencode

import httpx
import pytest
from joserfc import jws
from joserfc.jwk import KeyParameters, RSAKey
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from exercises import registry
from exercises.packs import path_pack
from exercises.scaffold import new_exercise
from server.config import Settings
from server.db import make_engine, transaction
from server.lti import claims as c
from server.lti.accounts import course_link, person, record_member
from server.lti.deeplink import open_request
from server.lti.launch import _launch
from server.lti.platforms import Registration, add_platform
from server.lti.roster import RosterSync, _apply
from server.models import Course, Enrollment, LtiDeepLink, LtiMember, LtiPlatform, LtiUser, SetEntry, utcnow
from tests.lti.conftest import LEARNER, STAFF, Lti, finished_request, lms_page_button
from tests.lti.servers import launch, lti_continue
from tests.lti.test_redteam import (  # noqa: F401  (module fixtures, used by name)
    Hostile,
    _hostile_course,
    course_l1,
    forged_launch,
    hostile_launch,
    people,
    served_and_registered,
    signed_in,
    tool_login,
)
from tests.pg import pg_database, pg_url  # noqa: F401  (fixtures)
from tests.server.conftest import (  # noqa: F401  (fixtures)
    db_backend,
    pytest_generate_tests,
    served_database,
    settings,
)

EXERCISE = "actor-loss"


@pytest.fixture(scope="module")
def evil(lti: Lti) -> Iterator[Hostile]:
    """One hostile LMS for the tests that do not change its key."""
    yield from served_and_registered(lti, Hostile)


@pytest.fixture
def rotating(lti: Lti) -> Iterator[Hostile]:
    """A hostile LMS of the test's own (its key is rotated by the test)."""
    yield from served_and_registered(lti, Hostile)


def _jwks_fetches(lms: Hostile) -> int:
    return sum(1 for method, path, _ in lms.hits if method == "GET" and path.startswith("/jwks"))


def _signed(lms: Hostile, body: dict[str, Any], key: RSAKey | None = None) -> str:
    """``body`` signed as an id_token by ``key`` (the LMS's own by default), its JSON written
    with ``\\u`` escapes, so a lone surrogate travels as JSON allows it."""
    key = key or lms.key
    payload = json.dumps(body).encode()  # ensure_ascii: "\ud83d" is written as the escape
    return jws.serialize_compact({"alg": "RS256", "kid": key.kid, "typ": "JWT"}, payload, key)


def _post(browser: httpx.Client, lti: Lti, token: str, state: str) -> httpx.Response:
    return browser.post(f"{lti.tool}/lti/launch", data={"id_token": token, "state": state})


# --- key rotation -------------------------------------------------------------------------------


def test_a_key_removed_from_the_lms_set_stops_verifying_once_the_cache_is_old(lti: Lti, rotating: Hostile) -> None:
    with lti.client() as browser:
        _hostile_course(browser, lti, rotating, "R9-stale")  # the tool caches the LMS's key K1
    leaked = rotating.key
    rotating.key = RSAKey.generate_key(2048, auto_kid=True)  # the LMS rotates K1 out (it leaked)
    with transaction(lti.state.session_factory) as session:  # the cache was fetched a month ago
        session.execute(
            update(LtiPlatform)
            .where(LtiPlatform.issuer == rotating.issuer)
            .values(jwks_fetched_at=utcnow() - timedelta(days=30))
        )
    fetches = _jwks_fetches(rotating)
    with lti.client() as attacker:  # whoever holds K1 signs a launch as the course's instructor
        answer = forged_launch(attacker, lti, rotating, str(leaked.kid), leaked)
    assert answer.status_code in (401, 403), answer.status_code
    assert _jwks_fetches(rotating) == fetches + 1  # the month-old set was read again, once


def test_a_key_rotated_under_the_same_kid_is_picked_up(lti: Lti, rotating: Hostile) -> None:
    with lti.client() as browser:
        _hostile_course(browser, lti, rotating, "R9-samekid")
    rotating.key = RSAKey.generate_key(
        2048, parameters=cast(KeyParameters, {"kid": str(rotating.key.kid)})
    )  # same kid, new key
    with lti.client() as browser:
        answer = hostile_launch(browser, lti, rotating, sub="h-prof-R9-samekid", context="R9-samekid")
        assert answer.status_code == 200, re.sub(r"\s+", " ", answer.text)[-300:]
    with lti.client() as forger:  # and the refresh a bad signature may make is bounded: one a minute
        for _ in range(5):
            forger_key = RSAKey.generate_key(2048, parameters=cast(KeyParameters, {"kid": str(rotating.key.kid)}))
            assert forged_launch(forger, lti, rotating, str(forger_key.kid), forger_key).status_code == 401
    assert _jwks_fetches(rotating) <= 3


def test_after_a_rotation_a_real_launch_refreshes_once_and_the_old_key_is_refused(lti: Lti, rotating: Hostile) -> None:
    with lti.client() as browser:
        _hostile_course(browser, lti, rotating, "R9-rotate")
    old = rotating.key
    rotating.key = RSAKey.generate_key(2048, auto_kid=True)
    fetches = _jwks_fetches(rotating)
    with lti.client() as browser:
        assert hostile_launch(browser, lti, rotating, sub="h-prof-R9-rotate", context="R9-rotate").status_code == 200
    assert _jwks_fetches(rotating) == fetches + 1
    with lti.client() as attacker:
        refused = forged_launch(attacker, lti, rotating, str(old.kid), old)
    assert refused.status_code == 401 and "Unknown signing key" in refused.text
    assert _jwks_fetches(rotating) <= fetches + 2  # the attacker's miss: one fetch, then the cooldown


# --- deep linking ---------------------------------------------------------------------------------


def _deep_linking_request(
    lms: Hostile, nonce: str, context: str, data: Any, accept: tuple[str, ...] = ("ltiResourceLink",)
) -> dict[str, Any]:
    body = lms.claims(nonce, sub=f"h-prof-{context}", context=context)
    del body[c.RESOURCE_LINK]
    body[c.MESSAGE_TYPE] = c.DEEP_LINKING_REQUEST
    body[c.DEEP_LINKING_SETTINGS] = {
        "deep_link_return_url": f"{lms.url}/dl-return",
        "accept_types": list(accept),
        "accept_multiple": True,
        "data": data,
    }
    return body


def _picker(browser: httpx.Client, lti: Lti, lms: Hostile, context: str, data: Any = None) -> httpx.Response:
    nonce, state = tool_login(browser, lti, lms)
    return _post(browser, lti, _signed(lms, _deep_linking_request(lms, nonce, context, data)), state)


def _send_picker(browser: httpx.Client, lti: Lti, picker: httpx.Response, *slugs: str) -> httpx.Response:
    found = re.search(r'<form id="lti-picker" method="post" action="([^"]+)"', picker.text)
    assert found, picker.text[-600:]
    return browser.post(
        lti.tool + unescape(found.group(1)),
        content=urlencode([("exercise", s) for s in slugs]),
        headers={"Origin": lti.tool, "Content-Type": "application/x-www-form-urlencoded"},
    )


def test_a_lone_surrogate_in_deep_linking_data_is_a_page_not_a_500(lti: Lti, evil: Hostile) -> None:
    with lti.client() as browser:
        _hostile_course(browser, lti, evil, "R9-dl-data")
        picker = _picker(browser, lti, evil, "R9-dl-data", data={"title": "Week 1 \ud83d"})
        if picker.status_code != 200:  # refused at the launch, with a page: safe
            assert 400 <= picker.status_code < 500 and "text/html" in picker.headers["content-type"]
            return
        answer = _send_picker(browser, lti, picker, EXERCISE)
    assert answer.status_code < 500, answer.text[-300:]
    assert "text/html" in answer.headers["content-type"]


def _answer_claims(answer: httpx.Response) -> str:
    """The JSON text of the signed deep-linking answer a picker's page carries."""
    jwt_text = unescape(re.search(r'name="JWT" value="([^"]+)"', answer.text).group(1))  # type: ignore[union-attr]
    body = jwt_text.split(".")[1]
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()


def _strict_json(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_deep_linking_data_that_is_no_json_number_never_makes_an_answer_that_is_not_json(
    lti: Lti, evil: Hostile
) -> None:
    with lti.client() as browser:
        _hostile_course(browser, lti, evil, "R9-dl-nan")
        nonce, state = tool_login(browser, lti, evil)
        body = json.dumps(
            _deep_linking_request(evil, nonce, "R9-dl-nan", {"weight": float("nan")})
        )  # Python writes NaN
        token = jws.serialize_compact({"alg": "RS256", "kid": evil.key.kid, "typ": "JWT"}, body.encode(), evil.key)
        picker = _post(browser, lti, token, state)
        if picker.status_code != 200:  # refused at the launch, with a page: safe
            assert 400 <= picker.status_code < 500 and "text/html" in picker.headers["content-type"]
            return
        answer = _send_picker(browser, lti, picker, EXERCISE)
    assert answer.status_code == 200, answer.text[-300:]
    _strict_json(_answer_claims(answer))  # RFC 7519: the claims are a JSON object


def test_a_deep_linking_request_that_accepts_no_resource_links_gets_none(lti: Lti, evil: Hostile) -> None:
    with lti.client() as browser:
        _hostile_course(browser, lti, evil, "R9-dl-types")
        nonce, state = tool_login(browser, lti, evil)
        body = _deep_linking_request(evil, nonce, "R9-dl-types", None, accept=("file", "html"))
        picker = _post(browser, lti, _signed(evil, body), state)
        if picker.status_code != 200:  # refused at the launch, with a page that says why: safe
            assert picker.status_code < 500 and "text/html" in picker.headers["content-type"]
            return
        answer = _send_picker(browser, lti, picker, EXERCISE)
    if answer.status_code == 200:
        items = json.loads(_answer_claims(answer))[c.CONTENT_ITEMS]
        assert all(item["type"] in ("file", "html") for item in items), items
    else:
        assert answer.status_code < 500 and "text/html" in answer.headers["content-type"]


@pytest.fixture
def unverified_pack(tmp_path: Path) -> Iterator[str]:
    """A pack exercise that never passed ``exercises verify``, in the catalogue the tool serves."""
    new_exercise("r9-unverified", tmp_path / "pack")
    registry.load([path_pack(tmp_path / "pack")])
    yield "r9-unverified"
    registry.use_version_source(None)
    registry.load()  # the test run's own catalogue again


def test_deep_linking_an_unverified_pack_exercise_is_an_lti_page(lti: Lti, evil: Hostile, unverified_pack: str) -> None:
    with lti.client() as browser:
        slug = _hostile_course(browser, lti, evil, "R9-dl-pack")
        picker = _picker(browser, lti, evil, "R9-dl-pack")
        assert picker.status_code == 200, picker.text[-400:]
        offered = f'value="{unverified_pack}"' in picker.text
        answer = _send_picker(browser, lti, picker, unverified_pack) if offered else None
    with lti.state.session_factory() as session:
        course = session.scalar(select(Course).where(Course.slug == slug))
        assert course is not None
        published = session.get(SetEntry, (course.id, unverified_pack)) is not None
    assert not published
    if answer is not None:  # offered after all: refusing it must still be an LTI page that says why
        assert answer.status_code < 500 and "text/html" in answer.headers["content-type"], answer.text[-300:]


def test_a_picker_opened_as_staff_is_refused_once_the_lms_launched_them_as_a_learner(lti: Lti, evil: Hostile) -> None:
    context, sub = "R9-demoted", "h-prof-R9-demoted"
    with lti.client() as browser:
        _hostile_course(browser, lti, evil, context)
        picker = _picker(browser, lti, evil, context)
        assert picker.status_code == 200
        # the LMS makes the same person a learner of the course; their next launch says so
        assert hostile_launch(browser, lti, evil, sub=sub, context=context, roles=[LEARNER]).status_code == 200
        answer = _send_picker(browser, lti, picker, EXERCISE)
    assert answer.status_code == 403 and "No longer an instructor" in answer.text


# --- roles, roster, login page --------------------------------------------------------------------


def test_a_staff_role_past_the_roles_read_is_no_staff(lti: Lti, evil: Hostile) -> None:
    with lti.client() as browser:
        slug = _hostile_course(browser, lti, evil, "R9-roles")
    with lti.client() as browser:
        roles = [LEARNER] * c.MAX_ROLES + [STAFF]
        page = signed_in(
            browser, lti, hostile_launch(browser, lti, evil, sub="h-r9-many", context="R9-roles", roles=roles)
        )
        assert page.status_code == 200 and "/dashboard?" not in str(page.url)
    with lti.state.session_factory() as session:
        user_id = session.scalar(select(LtiUser.user_id).where(LtiUser.sub == "h-r9-many"))
        course_id = session.scalar(select(Course.id).where(Course.slug == slug))
        assert (
            session.scalar(
                select(Enrollment.role).where(Enrollment.user_id == user_id, Enrollment.course_id == course_id)
            )
            == "learner"
        )


def test_a_hostile_roster_naming_the_real_lms_users_adds_none_of_them(lti: Lti, evil: Hostile, course_l1: str) -> None:  # noqa: F811
    members = [
        {"user_id": "h-prof-R9-roster", "name": "Prof", "roles": [STAFF], "status": "Active"},
        {"user_id": "sub-ada", "name": "Ada Lovelace", "roles": [STAFF], "status": "Active"},  # the real LMS's Ada
        {"user_id": "sub-prof", "name": "Grace Hopper", "roles": [LEARNER], "status": "Active"},
    ]
    evil.roster = lambda _page: (json.dumps({"members": members}).encode(), "")
    try:
        with lti.client() as browser:
            slug = _hostile_course(browser, lti, evil, "R9-roster")
            assert lms_page_button(browser, lti, slug, "roster").status_code == 303
            assert finished_request(lti, slug, "roster")[0] == "done"
    finally:
        evil.roster = Hostile.roster
    with lti.state.session_factory() as session:
        real = {
            p.sub: p.user_id
            for p in session.scalars(
                select(LtiUser)
                .join(LtiPlatform, LtiPlatform.id == LtiUser.platform_id)
                .where(LtiPlatform.issuer == lti.platform.url)
            )
        }
        course_id = session.scalar(select(Course.id).where(Course.slug == slug))
        enrolled = set(session.scalars(select(Enrollment.user_id).where(Enrollment.course_id == course_id)))
    assert {"sub-ada", "sub-prof"} <= set(real)
    assert not enrolled & {real["sub-ada"], real["sub-prof"]}
    assert len(enrolled) == 3  # the hostile LMS's own three accounts


def test_a_framed_logins_parameters_are_escaped_on_its_page(lti: Lti) -> None:
    hostile = '"><script>alert(1)</script>'
    with lti.client() as browser:
        page = browser.get(
            f"{lti.tool}/lti/login",
            params={"iss": lti.platform.url, "login_hint": hostile, "target_link_uri": f"{lti.tool}/lti/launch"},
            headers={"Sec-Fetch-Dest": "iframe"},
        )
    assert page.status_code == 200 and "<script>alert" not in page.text
    link = re.search(r'id="lti-open-tab" href="([^"]+)"', page.text)
    assert link and unescape(link.group(1)).startswith(f"{lti.tool}/lti/login?")


def test_launch_harness_of_the_real_lms_still_works(lti: Lti, course_l1: str) -> None:  # noqa: F811
    """Not an attack: the real LMS's launch works in this module, so the xfails fail for their own reason."""
    with lti.client() as browser:
        page = lti_continue(browser, lti.tool, launch(browser, lti.platform, user="ada", context="L1"))
    assert page.status_code == 200


# --- the largest claims, on SQLite and PostgreSQL ---------------------------------------------------


def test_the_largest_claims_a_launch_and_a_roster_take_are_stored_on_every_database(
    db_backend: str,  # noqa: F811
    settings: Settings,  # noqa: F811
) -> None:
    """Every claim at its cap, in characters of four UTF-8 bytes: what each cap lets through fits
    its column on PostgreSQL too (``String(n)`` counts characters there; no "value too long")."""
    served_database(settings)
    engine = make_engine(settings.DATABASE_URL)
    wide, site = "\U0001f600", "https://lms.big.example/"
    try:
        with Session(engine) as session:
            platform = add_platform(
                session,
                Registration(
                    "Big LMS", site.rstrip("/"), "big", f"{site}auth", f"{site}token", f"{site}jwks", ("big-1",)
                ),
            )
            staff_role = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
            body: dict[str, Any] = {
                "sub": wide * 255,
                "name": "\u00e9" * 2000,
                "email": "\u00fc" * 2000,
                "preferred_username": wide * 2000,
                c.DEPLOYMENT_ID: "big-1",
                c.MESSAGE_TYPE: c.DEEP_LINKING_REQUEST,
                c.VERSION: c.LTI_VERSION,
                c.ROLES: [staff_role] + [staff_role + "x" * (c.MAX_ROLE_CHARS - len(staff_role))] * (c.MAX_ROLES - 1),
                c.CONTEXT: {"id": wide * 255, "title": wide * 2000, "label": wide * 2000},
                c.NRPS: {"context_memberships_url": site + "n" * (2000 - len(site))},
                c.AGS: {"lineitems": site + "a" * (2000 - len(site)), "scope": ["s" * 199] * 20},
                c.DEEP_LINKING_SETTINGS: {"deep_link_return_url": site + "r" * (2000 - len(site)), "data": "d" * 1998},
            }
            checked = _launch(platform, "big-1", body)
            link = course_link(session, checked, True)
            user = person(
                session, platform.id, checked.sub, name=checked.name, email=checked.email, username=checked.username
            )
            record_member(session, link, user, checked.roles)
            open_request(session, checked, link, user)
            session.commit()
            members = [
                {
                    "user_id": "\U0001f601" * 255,
                    "name": wide * 5000,
                    "email": "\u00f6" * 5000,
                    "roles": [staff_role] * 60,
                },
                {"user_id": checked.sub, "roles": [LEARNER], "status": "Active"},
            ]
            _apply(session, link, platform.id, members, utcnow(), RosterSync())
            session.commit()
        with Session(engine) as session:
            assert (
                session.scalar(select(LtiDeepLink.return_url)) == body[c.DEEP_LINKING_SETTINGS]["deep_link_return_url"]
            )
            assert len(list(session.scalars(select(LtiMember)))) == 2
    finally:
        engine.dispose()
