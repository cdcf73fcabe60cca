"""Tenth white-box red team of LTI 1.3: each attempt of this round a test over real HTTP against
the real tool (``tests/lti/conftest``), the independent test platform (``tests/lti/platform``)
and hostile LMSs (``tests/lti/test_redteam.Hostile``, here :class:`Scripted`: a platform
registered with the tool as an administrator would, whose launches, key set and answers the
attacker writes, and whose key set can be held back or list extra keys). An attack that works is
a strict xfail asserting what a safe tool does; one the tool holds is a plain test.

Attacks that worked (strict xfails, fixed on ``lti10fix``: now plain tests, with the edges of
each fix at the end of the file), most severe first:

- after an idle night (the cached key set older than twice ``LTI_JWKS_MAX_AGE_SECONDS``:
  12 h by default, a course launched once a day), the launches that arrive while the one that
  won the refresh claim is still fetching the set are refused, 502 "keys could not be read",
  though the set is being read that very moment: a class starting together (or an outsider's
  one launch, timed just before theirs) turns a slow LMS key-set answer into error pages for
  real users. Low-medium: availability, no forgery.
  (``test_launches_during_a_refresh_of_a_night_old_key_set_are_not_refused``)
- an LMS that rotates its key under a fixed ``kid`` and publishes the old and the new key side
  by side for the overlap (what a rotation with a grace period under one key id looks like) is
  locked out for as long as both are listed: only the first key listed under a ``kid`` is ever
  tried, and the refresh on a bad signature finds the same first key again. Low: an LMS's
  availability, which RFC 7517 leaves to it (kids SHOULD differ).
  (``test_two_keys_published_under_one_kid_both_verify``)
- a deep-linking request whose ``accept_types`` is a bare string (``"html"``: not the array the
  spec has) is read as "no types named" and answered with resource links: the §4.4.1 check of
  round 9 only looks at arrays. Low: nothing crosses a trust boundary; the LMS misplaces or
  refuses the answer. (``test_accept_types_given_as_a_bare_string_is_still_honoured``)
- likewise ``accept_multiple: "false"`` (a string, not the boolean) is read as true: the picker's
  answer carries every exercise ticked, where the LMS asked for one. Low.
  (``test_accept_multiple_given_as_a_string_false_sends_one_item``)

Attempts the tool held (plain tests below): a forged token carrying its own key (``jwk``) and a
key-set URL (``jku``, ``x5u``) in its header (verified by the LMS's key only, the named URL never
fetched); a replayed id_token with its state (one nonce spent, the replay refused); a token a
hostile LMS signed as the real LMS, for a login begun at the real LMS (refused, one fetch of
the real set at most); a hostile LMS naming the real LMS's deployment id (unregistered there);
an ``iat`` of ``1e400`` (a JSON number that ``json`` reads as infinity past the strict decoder:
refused); deep-linking ``data`` holding ``1e400`` (refused with a page, or given back as JSON);
an id_token over the size cap and a ``kid`` over its cap or holding a lone surrogate (a page,
no fetch or one); unknown-kid and bad-signature forgeries interleaved (one fetch between them:
the two share the cooldown); lookalike staff roles (an LTI 1.1 URN, full-width letters,
``https://`` instead of ``http://``, case changed: no staff); a sign-in link used twice (once);
a second registration sharing an issuer (a login must name its client id; a token for the
other client id, alone or among several audiences with ``azp`` the other, is "Wrong audience").

Read, not driven: a deep-linking return URL on another port of the LMS's host is accepted
(hosts are compared, not origins; the answer is for this LMS's client id and deployment, so a
service on another port learns nothing it could use elsewhere); a hostile LMS naming the real
LMS's AGS URLs gets its own bearer token sent there (the real LMS refuses it; no token of the
real LMS ever leaves for a URL a hostile launch named: ``LmsClient`` is per platform); results
and NRPS answers are parsed with Python's lax ``json`` but every number read is checked finite
(``server.lti.grades``); the key-set race in which a removed key verifies while a refresh is in
flight is documented (``docs/security.md``: "never one older than twice the limit").
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from html import unescape
from typing import Any, cast
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from joserfc import jws
from joserfc.jwk import KeyParameters, RSAKey
from sqlalchemy import func, select, update

from server.db import transaction
from server.lti import claims as c
from server.lti.launch import state_cookie_name
from server.lti.platforms import Registration, add_platform
from server.models import LtiLogin, LtiPlatform, LtiTicket, utcnow
from tests.lti.conftest import LEARNER, Lti
from tests.lti.servers import CLIENT_ID, DEPLOYMENT_ID, launch, lti_continue
from tests.lti.test_redteam import (  # noqa: F401  (module fixtures, used by name)
    HOSTILE_CLIENT,
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

EXERCISE = "actor-loss"


@dataclass
class Scripted(Hostile):
    """A hostile LMS whose key set can list a key before its own (``first``), and be held back
    (``hold``: the set answers once ``release`` is set; ``entered`` says a fetch is waiting)."""

    first: RSAKey | None = None
    hold: bool = False
    broken: bool = False  # the set answers 500
    entered: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)

    def app(self) -> FastAPI:
        app = super().app()

        @app.middleware("http")
        async def scripted(request: Request, call_next: Any) -> Any:
            if request.url.path != "/jwks":
                return await call_next(request)
            self.hits.append((request.method, "/jwks?" + request.url.query, dict(request.headers)))  # answered here
            if self.hold:
                self.entered.set()
                await asyncio.to_thread(self.release.wait, 30)
            if self.broken:
                return JSONResponse({"error": "down"}, status_code=500)
            keys = [self.first, self.key] if self.first is not None else [self.key]
            return JSONResponse(
                {"keys": [{**k.as_dict(private=False), "kid": k.kid, "alg": "RS256", "use": "sig"} for k in keys]}
            )

        return app


@pytest.fixture(scope="module")
def evil(lti: Lti) -> Iterator[Scripted]:
    """One hostile LMS for the tests that leave its key alone."""
    yield from served_and_registered(lti, Scripted)


@pytest.fixture
def rotating(lti: Lti) -> Iterator[Scripted]:
    """A hostile LMS of the test's own (its key set is changed by the test)."""
    yield from served_and_registered(lti, Scripted)


def _fetches(lms: Hostile, path: str = "/jwks") -> int:
    return sum(1 for method, seen, _ in lms.hits if method == "GET" and seen.startswith(path + "?"))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _raw_token(header: dict[str, Any], payload: str, key: RSAKey | None) -> str:
    """A compact JWS of ``payload`` (JSON text as given), signed by ``key`` (None: a signature
    of garbage, for attacks decided before the signature is checked)."""
    if key is None:
        return f"{_b64(json.dumps(header).encode())}.{_b64(payload.encode())}.{_b64(b'x' * 256)}"
    return jws.serialize_compact(header, payload.encode(), key)


def _post(browser: httpx.Client, lti: Lti, token: str, state: str) -> httpx.Response:
    return browser.post(f"{lti.tool}/lti/launch", data={"id_token": token, "state": state})


def _is_page(answer: httpx.Response) -> bool:
    return 400 <= answer.status_code < 500 and "text/html" in answer.headers["content-type"]


def _login_at(browser: httpx.Client, lti: Lti, issuer: str) -> tuple[str, str]:
    login = browser.get(
        f"{lti.tool}/lti/login",
        params={"iss": issuer, "login_hint": "x", "target_link_uri": f"{lti.tool}/lti/launch"},
        follow_redirects=False,
    )
    assert login.status_code == 302, login.text[-400:]
    query = parse_qs(urlsplit(login.headers["location"]).query)
    return query["nonce"][0], query["state"][0]


# --- signatures and keys ------------------------------------------------------------------------


def test_a_token_carrying_its_own_key_or_key_url_is_verified_by_the_lms_key_only(lti: Lti, evil: Scripted) -> None:
    with lti.client() as browser:
        _hostile_course(browser, lti, evil, "R10-jwk")
    attacker = RSAKey.generate_key(2048, auto_kid=True)
    embedded = {"jwk": attacker.as_dict(private=False)}
    urls = {"jku": f"{evil.url}/attacker-keys", "x5u": f"{evil.url}/attacker-cert"}
    with lti.client() as browser:
        for extra in (embedded, urls, {**embedded, **urls}):
            nonce, state = tool_login(browser, lti, evil)
            header = {"alg": "RS256", "kid": str(evil.key.kid), **extra}  # the LMS's real key id
            body = json.dumps(evil.claims(nonce, sub="h-prof-R10-jwk", context="R10-jwk"))
            answer = _post(browser, lti, _raw_token(header, body, attacker), state)
            assert _is_page(answer), answer.status_code  # "not a signed JWT" or "Signature does not verify"
            assert "Malformed launch" in answer.text or "Signature does not verify" in answer.text
    assert _fetches(evil, "/attacker-keys") == 0 and _fetches(evil, "/attacker-cert") == 0


def test_a_replayed_launch_spends_one_nonce_and_is_refused(lti: Lti, evil: Scripted) -> None:
    with lti.client() as browser:
        _hostile_course(browser, lti, evil, "R10-replay")
    with lti.client() as browser:
        nonce, state = tool_login(browser, lti, evil)
        token = evil.sign(evil.claims(nonce, sub="h-r10-replay", context="R10-replay", roles=[LEARNER]))
        kept = [cookie for cookie in browser.cookies.jar if cookie.name == state_cookie_name(state)]
        first = _post(browser, lti, token, state)
        for cookie in kept:  # the replay brings the state cookie back, as a copied request would
            browser.cookies.jar.set_cookie(cookie)
        again = _post(browser, lti, token, state)
    assert first.status_code == 200, first.text[-300:]
    assert again.status_code == 403 and "already used" in again.text
    with lti.state.session_factory() as session:
        assert session.scalar(select(func.count()).select_from(LtiLogin).where(LtiLogin.nonce == nonce)) == 1


def test_a_hostile_lms_signing_as_the_real_lms_is_refused(lti: Lti, evil: Scripted, course_l1: str) -> None:  # noqa: F811
    before = lti.platform.state()
    with lti.client() as browser:
        nonce, state = _login_at(browser, lti, lti.platform.url)
        body = evil.claims(nonce, sub="sub-prof", context="L1", iss=lti.platform.url, aud=CLIENT_ID)
        body[c.DEPLOYMENT_ID] = DEPLOYMENT_ID
        for kid in (str(evil.key.kid), before["kid"]):  # its own kid, then the real LMS's
            header = {"alg": "RS256", "kid": kid, "typ": "JWT"}
            answer = _post(browser, lti, _raw_token(header, json.dumps(body), evil.key), state)
            assert answer.status_code == 401, answer.status_code
            nonce, state = _login_at(browser, lti, lti.platform.url)
            body["nonce"] = nonce
    assert lti.platform.state()["jwks_fetches"] <= before["jwks_fetches"] + 1
    with lti.client() as browser:  # and the real LMS still launches
        page = lti_continue(browser, lti.tool, launch(browser, lti.platform, user="prof", context="L1"))
    assert page.status_code == 200


def test_a_hostile_lms_naming_the_real_lms_deployment_is_refused(lti: Lti, evil: Scripted) -> None:
    with lti.client() as browser:
        answer = hostile_launch(
            browser, lti, evil, sub="h-r10-dep", context="R10-dep", **{c.DEPLOYMENT_ID: DEPLOYMENT_ID}
        )
    assert answer.status_code == 403 and "Deployment not registered" in answer.text


def test_an_issue_time_past_any_float_is_refused(lti: Lti, evil: Scripted) -> None:
    with lti.client() as browser:
        nonce, state = tool_login(browser, lti, evil)
        body = evil.claims(nonce, sub="h-r10-iat", context="R10-iat", iat="__IAT__")
        text = json.dumps(body).replace('"__IAT__"', "1e400")  # valid JSON; Python reads inf
        answer = _post(browser, lti, _raw_token({"alg": "RS256", "kid": str(evil.key.kid)}, text, evil.key), state)
    assert _is_page(answer), answer.status_code


def test_an_oversized_token_or_kid_is_a_page_and_fetches_at_most_once(lti: Lti, rotating: Scripted) -> None:
    with lti.client() as browser:
        _hostile_course(browser, lti, rotating, "R10-size")
    fetches = _fetches(rotating)
    with lti.client() as browser:
        nonce, state = tool_login(browser, lti, rotating)
        huge = _raw_token({"alg": "RS256", "kid": "k"}, json.dumps(rotating.claims(nonce, pad="p" * 70_000)), None)
        assert _is_page(_post(browser, lti, huge, state))
        for kid in ("k" * 201, "\ud800", "\u202e" + "x" * 10):
            nonce, state = tool_login(browser, lti, rotating)
            header = {"alg": "RS256", "kid": kid}
            assert _is_page(_post(browser, lti, _raw_token(header, json.dumps(rotating.claims(nonce)), None), state))
    assert _fetches(rotating) <= fetches + 1


def test_unknown_kid_and_bad_signature_forgeries_share_one_cooldown(lti: Lti, rotating: Scripted) -> None:
    with lti.client() as browser:
        _hostile_course(browser, lti, rotating, "R10-cool")
    fetches = _fetches(rotating)
    with lti.client() as attacker:
        for round_ in range(3):
            stranger = RSAKey.generate_key(2048, auto_kid=True)
            assert forged_launch(attacker, lti, rotating, f"made-up-{round_}", stranger).status_code == 401
            assert forged_launch(attacker, lti, rotating, str(rotating.key.kid), stranger).status_code == 401
    assert _fetches(rotating) == fetches + 1


def test_two_keys_published_under_one_kid_both_verify(lti: Lti, rotating: Scripted) -> None:
    with lti.client() as browser:
        _hostile_course(browser, lti, rotating, "R10-overlap")
    old = rotating.key
    rotating.first = old  # still listed first, for the overlap
    rotating.key = RSAKey.generate_key(2048, parameters=cast(KeyParameters, {"kid": str(old.kid)}))
    fetches = _fetches(rotating)
    with lti.client() as browser:
        answer = hostile_launch(browser, lti, rotating, sub="h-prof-R10-overlap", context="R10-overlap")
    assert _fetches(rotating) <= fetches + 1
    assert answer.status_code == 200, re.sub(r"\s+", " ", answer.text)[-300:]


def test_launches_during_a_refresh_of_a_night_old_key_set_are_not_refused(lti: Lti, rotating: Scripted) -> None:
    with lti.client() as browser:
        _hostile_course(browser, lti, rotating, "R10-night")
    limit = timedelta(seconds=lti.settings.LTI_JWKS_MAX_AGE_SECONDS)
    with transaction(lti.state.session_factory) as session:  # last fetched yesterday evening
        session.execute(
            update(LtiPlatform)
            .where(LtiPlatform.issuer == rotating.issuer)
            .values(jwks_fetched_at=utcnow() - 2 * limit - timedelta(hours=1), jwks_miss_at=None)
        )
    rotating.hold = True
    first: list[httpx.Response] = []

    def first_launch() -> None:
        with lti.client() as browser:
            first.append(
                hostile_launch(browser, lti, rotating, sub="h-r10-night-1", context="R10-night", roles=[LEARNER])
            )

    second: list[httpx.Response] = []

    def second_launch() -> None:
        with lti.client() as browser:  # a classmate, a moment later
            second.append(
                hostile_launch(browser, lti, rotating, sub="h-r10-night-2", context="R10-night", roles=[LEARNER])
            )

    winner, classmate = threading.Thread(target=first_launch), threading.Thread(target=second_launch)
    winner.start()
    try:
        assert rotating.entered.wait(30), "the first launch never fetched the key set"
        fetches = _fetches(rotating)
        classmate.start()
        # the LMS answers while the classmate's launch is in: it waits for that answer (it was
        # refused at once, 502, before), then verifies with the set just read
        classmate.join(1.0)
    finally:
        rotating.release.set()
        winner.join(60)
        classmate.join(60)
    assert first and first[0].status_code == 200, first
    assert second and second[0].status_code == 200, re.sub(r"\s+", " ", second[0].text)[-300:] if second else second
    assert _fetches(rotating) == fetches  # one fetch for the burst


# --- deep linking ---------------------------------------------------------------------------------


def _deep_linking_request(lms: Hostile, nonce: str, context: str, data: Any, accept: Any) -> dict[str, Any]:
    body = lms.claims(nonce, sub=f"h-prof-{context}", context=context)
    del body[c.RESOURCE_LINK]
    body[c.MESSAGE_TYPE] = c.DEEP_LINKING_REQUEST
    body[c.DEEP_LINKING_SETTINGS] = {
        "deep_link_return_url": f"{lms.url}/dl-return",
        "accept_types": accept,
        "accept_multiple": True,
        "data": data,
    }
    return body


def _send_picker(browser: httpx.Client, lti: Lti, picker: httpx.Response, *slugs: str) -> httpx.Response:
    found = re.search(r'<form id="lti-picker" method="post" action="([^"]+)"', picker.text)
    assert found, picker.text[-600:]
    return browser.post(
        lti.tool + unescape(found.group(1)),
        content=urlencode([("exercise", s) for s in slugs]),
        headers={"Origin": lti.tool, "Content-Type": "application/x-www-form-urlencoded"},
    )


def _answer_claims(answer: httpx.Response) -> str:
    jwt_text = unescape(re.search(r'name="JWT" value="([^"]+)"', answer.text).group(1))  # type: ignore[union-attr]
    body = jwt_text.split(".")[1]
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()


def _strict(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    def finite(number: str) -> float:
        value = float(number)
        if value in (float("inf"), float("-inf")):
            raise ValueError(f"{number} is no finite number")
        return value

    return json.loads(text, parse_constant=refuse, parse_float=finite)


def _picker(browser: httpx.Client, lti: Lti, lms: Hostile, context: str, text: str) -> httpx.Response:
    nonce, state = tool_login(browser, lti, lms)
    return _post(
        browser,
        lti,
        _raw_token({"alg": "RS256", "kid": str(lms.key.kid)}, text.replace("__NONCE__", nonce), lms.key),
        state,
    )


def test_deep_linking_data_past_any_float_is_a_page_or_given_back_as_json(lti: Lti, evil: Scripted) -> None:
    with lti.client() as browser:
        _hostile_course(browser, lti, evil, "R10-dl-big")
        text = json.dumps(_deep_linking_request(evil, "__NONCE__", "R10-dl-big", {"w": "__W__"}, ["ltiResourceLink"]))
        picker = _picker(browser, lti, evil, "R10-dl-big", text.replace('"__W__"', "1e400"))
        if picker.status_code != 200:  # refused at the launch, with a page: safe
            assert _is_page(picker), picker.status_code
            return
        answer = _send_picker(browser, lti, picker, EXERCISE)
    assert answer.status_code < 500, answer.text[-300:]
    if answer.status_code == 200:
        _strict(_answer_claims(answer))


def test_accept_types_given_as_a_bare_string_is_still_honoured(lti: Lti, evil: Scripted) -> None:
    with lti.client() as browser:
        _hostile_course(browser, lti, evil, "R10-dl-str")
        text = json.dumps(_deep_linking_request(evil, "__NONCE__", "R10-dl-str", None, "html"))
        picker = _picker(browser, lti, evil, "R10-dl-str", text)
        if picker.status_code != 200:  # refused with a page: safe
            assert _is_page(picker), picker.status_code
            return
        answer = _send_picker(browser, lti, picker, EXERCISE)
    if answer.status_code == 200:
        items = json.loads(_answer_claims(answer))[c.CONTENT_ITEMS]
        assert all(item["type"] == "html" for item in items), items
    else:
        assert _is_page(answer)


# --- roles and sign-in ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "role",
    [
        "urn:lti:role:ims/lis/Instructor",  # LTI 1.1's URN
        "\uff29nstructor",  # a full-width I
        "https://purl.imsglobal.org/vocab/lis/v2/membership#Instructor",  # https, not the URI
        "http://purl.imsglobal.org/vocab/lis/v2/membership#instructor",  # lower case
        "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor#x",
    ],
)
def test_a_lookalike_staff_role_is_no_staff(lti: Lti, evil: Scripted, role: str) -> None:
    with lti.client() as browser:
        _hostile_course(browser, lti, evil, "R10-roles")
    with lti.client() as browser:
        answer = hostile_launch(browser, lti, evil, sub="h-r10-look", context="R10-roles", roles=[LEARNER, role])
        page = signed_in(browser, lti, answer)
    assert page.status_code == 200 and "/dashboard?" not in str(page.url), page.url


def test_a_sign_in_link_signs_in_once(lti: Lti, evil: Scripted) -> None:
    with lti.client() as browser:
        _hostile_course(browser, lti, evil, "R10-once")
    with lti.client() as browser:
        answer = hostile_launch(browser, lti, evil, sub="h-r10-once", context="R10-once", roles=[LEARNER])
        assert signed_in(browser, lti, answer).status_code == 200
        link = re.search(r'href="(/lti/continue/[^"]+)"', answer.text).group(1)  # type: ignore[union-attr]
        with lti.client() as other:  # the link copied to a second browser, after its use
            again = other.get(lti.tool + unescape(link), follow_redirects=False)
    assert again.status_code in (403, 404, 409, 410), again.status_code
    with lti.state.session_factory() as session:
        token = unescape(link).rsplit("/", 1)[1]
        assert session.scalar(select(LtiTicket.used_at).where(LtiTicket.token == token)) is not None


def test_the_hostile_client_id_is_not_the_real_one() -> None:
    """Not an attack: the confusion tests above rely on two different client ids."""
    assert HOSTILE_CLIENT != CLIENT_ID


def test_accept_multiple_given_as_a_string_false_sends_one_item(lti: Lti, evil: Scripted) -> None:
    with lti.client() as browser:
        _hostile_course(browser, lti, evil, "R10-dl-one")
        body = _deep_linking_request(evil, "__NONCE__", "R10-dl-one", None, ["ltiResourceLink"])
        body[c.DEEP_LINKING_SETTINGS]["accept_multiple"] = "false"
        picker = _picker(browser, lti, evil, "R10-dl-one", json.dumps(body))
        if picker.status_code != 200:  # refused with a page: safe
            assert _is_page(picker), picker.status_code
            return
        answer = _send_picker(browser, lti, picker, EXERCISE, "critic-loss")
    assert answer.status_code == 200, answer.text[-300:]
    assert len(json.loads(_answer_claims(answer))[c.CONTENT_ITEMS]) == 1


def test_two_registrations_of_one_issuer_are_not_confused(lti: Lti, rotating: Scripted) -> None:
    """A second registration sharing the LMS's issuer (Canvas cloud: one issuer, a client id per
    school): a login must name its client id, and a token for one registration's client id is
    refused at the other's login, whatever audiences it lists."""
    second = "second-client-of-the-same-issuer"
    with transaction(lti.state.session_factory) as session:
        add_platform(
            session, Registration(**{**rotating.registration().__dict__, "client_id": second, "name": "Second"})
        )
    with lti.client() as browser:
        ambiguous = browser.get(
            f"{lti.tool}/lti/login",
            params={"iss": rotating.issuer, "login_hint": "x", "target_link_uri": f"{lti.tool}/lti/launch"},
            follow_redirects=False,
        )
        assert _is_page(ambiguous) and "Several registrations" in unescape(ambiguous.text)
        for aud, azp in ((HOSTILE_CLIENT, None), ([HOSTILE_CLIENT, second], HOSTILE_CLIENT)):
            login = browser.get(
                f"{lti.tool}/lti/login",
                params={
                    "iss": rotating.issuer,
                    "client_id": second,
                    "login_hint": "x",
                    "target_link_uri": f"{lti.tool}/lti/launch",
                },
                follow_redirects=False,
            )
            query = parse_qs(urlsplit(login.headers["location"]).query)
            assert query["client_id"] == [second]
            body = rotating.claims(query["nonce"][0], sub="h-r10-two", context="R10-two", aud=aud)
            if azp is not None:
                body["azp"] = azp
            answer = _post(browser, lti, rotating.sign(body), query["state"][0])
            assert answer.status_code == 401 and "Wrong audience" in answer.text, answer.status_code


# --- round 10 fixes: the edges of what was fixed --------------------------------------------------


def test_launches_waiting_on_a_failed_refresh_of_a_night_old_key_set_are_refused(lti: Lti, rotating: Scripted) -> None:
    """The other side of the wait: the refresh the classmate waits on fails (the LMS answers
    500), so both launches are refused (502), one fetch between them."""
    with lti.client() as browser:
        _hostile_course(browser, lti, rotating, "R10F-night")
    limit = timedelta(seconds=lti.settings.LTI_JWKS_MAX_AGE_SECONDS)
    with transaction(lti.state.session_factory) as session:
        session.execute(
            update(LtiPlatform)
            .where(LtiPlatform.issuer == rotating.issuer)
            .values(jwks_fetched_at=utcnow() - 2 * limit - timedelta(hours=1), jwks_miss_at=None)
        )
    rotating.hold = rotating.broken = True
    answers: list[httpx.Response] = []

    def one_launch(sub: str) -> None:
        with lti.client() as browser:
            answers.append(hostile_launch(browser, lti, rotating, sub=sub, context="R10F-night", roles=[LEARNER]))

    winner = threading.Thread(target=one_launch, args=("h-r10f-night-1",))
    classmate = threading.Thread(target=one_launch, args=("h-r10f-night-2",))
    winner.start()
    try:
        assert rotating.entered.wait(30), "the first launch never fetched the key set"
        fetches = _fetches(rotating)
        classmate.start()
        classmate.join(1.0)
    finally:
        rotating.release.set()
        winner.join(60)
        classmate.join(60)
    assert sorted(a.status_code for a in answers) == [502, 502], [a.status_code for a in answers]
    assert all("could not be read" in a.text for a in answers)
    assert _fetches(rotating) == fetches


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("accept_types", 7),
        ("accept_types", {"type": "ltiResourceLink"}),
        ("accept_types", ["ltiResourceLink", 3]),
        ("accept_types", ["ltiResourceLink"] * 21),
        ("accept_multiple", "yes"),
        ("accept_multiple", 0),
        ("accept_multiple", ["false"]),
    ],
)
def test_deep_linking_settings_of_the_wrong_json_type_are_refused_with_a_page(
    lti: Lti, evil: Scripted, field: str, value: Any
) -> None:
    with lti.client() as browser:
        _hostile_course(browser, lti, evil, "R10F-dl-type")
        body = _deep_linking_request(evil, "__NONCE__", "R10F-dl-type", None, ["ltiResourceLink"])
        body[c.DEEP_LINKING_SETTINGS][field] = value
        picker = _picker(browser, lti, evil, "R10F-dl-type", json.dumps(body))
    assert _is_page(picker) and "Invalid launch" in picker.text and field in picker.text, picker.status_code


def test_accept_multiple_given_as_a_string_true_sends_every_item(lti: Lti, evil: Scripted) -> None:
    with lti.client() as browser:
        _hostile_course(browser, lti, evil, "R10F-dl-all")
        body = _deep_linking_request(evil, "__NONCE__", "R10F-dl-all", None, "ltiResourceLink")  # a bare string too
        body[c.DEEP_LINKING_SETTINGS]["accept_multiple"] = "true"
        picker = _picker(browser, lti, evil, "R10F-dl-all", json.dumps(body))
        assert picker.status_code == 200, re.sub(r"\s+", " ", picker.text)[-300:]
        answer = _send_picker(browser, lti, picker, EXERCISE, "critic-loss")
    assert answer.status_code == 200, answer.text[-300:]
    assert len(json.loads(_answer_claims(answer))[c.CONTENT_ITEMS]) == 2


def test_each_key_under_one_kid_verifies_from_the_cache(lti: Lti, rotating: Scripted) -> None:
    """Once the overlap's set is cached, a launch signed by either key verifies without a fetch
    (each key under the kid is tried), and a stranger's key under that kid still does not."""
    with lti.client() as browser:
        _hostile_course(browser, lti, rotating, "R10F-overlap")
    old = rotating.key
    rotating.first = old
    rotating.key = RSAKey.generate_key(2048, parameters=cast(KeyParameters, {"kid": str(old.kid)}))
    new = rotating.key
    with lti.client() as browser:  # the new key: one refresh finds it
        assert (
            hostile_launch(browser, lti, rotating, sub="h-prof-R10F-overlap", context="R10F-overlap").status_code == 200
        )
    fetches = _fetches(rotating)
    for signer in (old, new, old):
        rotating.key = signer
        with lti.client() as browser:
            answer = hostile_launch(browser, lti, rotating, sub="h-prof-R10F-overlap", context="R10F-overlap")
        assert answer.status_code == 200, re.sub(r"\s+", " ", answer.text)[-300:]
    rotating.key = new
    with lti.client() as attacker:
        stranger = RSAKey.generate_key(2048, auto_kid=True)
        assert forged_launch(attacker, lti, rotating, str(old.kid), stranger).status_code == 401
    assert _fetches(rotating) <= fetches + 1  # the forgery's refresh, at most
