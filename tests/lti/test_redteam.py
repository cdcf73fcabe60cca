"""White-box red team of LTI 1.3 (issue 35): attacks that worked, each written as a strict
xfail, and fixed since (branch lti-fix: the markers removed).

Every test asserts what a safe tool does; each failed while the attack succeeded. The last
section holds the holes the fixers noticed with no red-team test.

The attacker plays three parts, all over real HTTP against the real tool (``tests/lti/conftest``):

- an outsider or a learner, with a browser (``httpx`` keeping cookies);
- the independent test platform (``tests/lti/platform``), as a real LMS's users;
- a hostile LMS: :class:`Hostile`, a second platform registered with the tool as an
  administrator would (its own RSA key, JWKS, token endpoint, NRPS and AGS), whose answers the
  attacker writes. It signs its own launches, so every claim is the attacker's.

The attempts that failed (the tool held) are listed in the red-team report of issue 35, not here.
"""

from __future__ import annotations

import ipaddress
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from html import unescape
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from joserfc import jws, jwt
from joserfc.jwk import RSAKey
from sqlalchemy import func, select

from server.courses.corrections import excuse, override
from server.courses.sets import publish
from server.db import transaction
from server.lti import claims as c
from server.lti.platforms import Registration, add_platform
from server.models import Course, LtiContext, LtiLogin, LtiMember, LtiPlatform, LtiUser, Submission, User, utcnow
from server.users.service import issue_token
from tests.lti.conftest import LEARNER, SECRET, STAFF, TA, Lti, finished_request, lms_page_button
from tests.lti.servers import free_port, launch, lti_continue, make_certificate

HOSTILE_CLIENT = "tool-at-hostile-lms"
HOSTILE_DEPLOYMENT = "hd-1"
PEOPLE = {
    "prof": {"sub": "sub-prof", "name": "Grace Hopper", "email": "grace@example.edu", "login": "ghopper", "roles": {"L1": [STAFF]}},
    "ada": {"sub": "sub-ada", "name": "Ada Lovelace", "email": "ada@example.edu", "roles": {"L1": [LEARNER], "L9": [TA]}},
    "mal": {"sub": "sub-mal", "name": "Mallory", "email": "mal@example.edu", "roles": {"L1": [LEARNER]}},
}
CONTEXTS = {"L1": {"title": "RLHF in practice", "label": "RLHF-201"}, "L9": {"title": "Intro to Python", "label": "PY-101"}}


# --- a hostile LMS ----------------------------------------------------------------------------


def _certificate(folder: Path, ips: list[str]) -> tuple[Path, Path]:
    """A self-signed CA certificate for ``localhost`` and ``ips`` (the hostile LMS's https)."""
    return make_certificate(folder, ips=ips, common_name="hostile", stem="hostile")


@dataclass
class Hostile:
    """A platform whose every answer the attacker writes; ``hits`` is every request it got."""

    url: str
    key: RSAKey = field(default_factory=lambda: RSAKey.generate_key(2048, auto_kid=True))
    hits: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    #: NRPS: page number -> (raw body, Link header); default: an empty roster.
    roster: Callable[[int], tuple[bytes, str]] = lambda _page: (b'{"members": []}', "")
    access_token: str = "hostile-access-token"
    #: AGS: the status a score for this ``userId`` gets (200 when absent); every score received.
    refuse_scores: dict[str, int] = field(default_factory=dict)
    scores: list[dict[str, Any]] = field(default_factory=list)
    #: The raw answer to a line items list (AGS).
    lineitems_body: bytes = b"[]"
    #: The status the key set answers with (200: the key).
    jwks_status: int = 200

    @property
    def issuer(self) -> str:
        return self.url

    def registration(self) -> Registration:
        return Registration(
            name="Hostile LMS",
            issuer=self.issuer,
            client_id=HOSTILE_CLIENT,
            auth_login_url=f"{self.url}/auth",
            auth_token_url=f"{self.url}/token",
            jwks_url=f"{self.url}/jwks",
            deployment_ids=(HOSTILE_DEPLOYMENT,),
        )

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.middleware("http")
        async def record(request: Request, call_next: Any) -> Any:
            self.hits.append((request.method, request.url.path + "?" + request.url.query, dict(request.headers)))
            return await call_next(request)

        @app.get("/jwks")
        def jwks() -> Response:
            if self.jwks_status != 200:
                return JSONResponse({"error": "down"}, status_code=self.jwks_status)
            return JSONResponse({"keys": [{**self.key.as_dict(private=False), "kid": self.key.kid, "alg": "RS256", "use": "sig"}]})

        @app.post("/token")
        def token() -> Response:
            body = json.dumps({"access_token": self.access_token, "token_type": "Bearer", "expires_in": 3600}, ensure_ascii=False)
            return Response(body.encode(), media_type="application/json")

        @app.get("/nrps")
        def nrps(page: int = 0) -> Response:
            body, link = self.roster(page)
            return Response(body, media_type="application/json", headers={"Link": link} if link else {})

        @app.get("/ags/lineitems")
        def line_items() -> Response:
            return Response(self.lineitems_body, media_type="application/json")

        @app.post("/ags/lineitems")
        async def new_line_item(request: Request) -> Response:
            item = await request.json()
            return JSONResponse({**item, "id": f"{self.url}/ags/lineitems/{item['resourceId']}"})

        @app.post("/ags/lineitems/{item}/scores")
        async def score(item: str, request: Request) -> Response:
            body = await request.json()
            status = self.refuse_scores.get(body.get("userId"), 200)
            if status == 200:
                self.scores.append({**body, "lineitem": item})
            return JSONResponse({"error": "user not in course"} if status != 200 else {}, status_code=status)

        @app.api_route("/{rest:path}", methods=["GET", "POST"])
        def anything(rest: str) -> Response:  # the rest (line item lists, results): empty answers
            return JSONResponse([])

        return app

    def claims(self, nonce: str, *, sub: str = "h-sub", roles: list[str] | None = None, context: str = "HC1", **extra: Any) -> dict[str, Any]:
        """A launch the hostile LMS signs: resource link, as an instructor by default."""
        now = int(time.time())
        body: dict[str, Any] = {
            "iss": self.issuer,
            "aud": HOSTILE_CLIENT,
            "sub": sub,
            "nonce": nonce,
            "iat": now,
            "exp": now + 300,
            "name": f"Hostile {sub}",
            c.DEPLOYMENT_ID: HOSTILE_DEPLOYMENT,
            c.MESSAGE_TYPE: c.RESOURCE_LINK_REQUEST,
            c.VERSION: c.LTI_VERSION,
            c.ROLES: roles if roles is not None else [STAFF],
            c.CONTEXT: {"id": context, "title": "Hostile course", "label": f"hostile-{context}"},
            c.RESOURCE_LINK: {"id": "hrl-1"},
            c.NRPS: {"context_memberships_url": f"{self.url}/nrps", "service_versions": ["2.0"]},
            c.AGS: {"lineitems": f"{self.url}/ags/lineitems", "scope": [c.SCOPE_LINEITEM, c.SCOPE_SCORE, c.SCOPE_RESULT_READ]},
        }
        body.update(extra)
        return body

    def sign(self, body: dict[str, Any]) -> str:
        return jwt.encode({"alg": "RS256", "kid": self.key.kid, "typ": "JWT"}, body, self.key)



class _Served:
    """``app`` served by uvicorn in a thread (https when a certificate is given)."""

    def __init__(self, app: FastAPI, host: str, port: int, cert: Path | None = None, key: Path | None = None) -> None:
        tls = {"ssl_certfile": str(cert), "ssl_keyfile": str(key)} if cert and key else {}
        self.server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", log_config=None, **tls))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> _Served:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "server did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def _outside_address() -> str | None:
    """An address of this machine that is not loopback (what a remote LMS looks like to the tool)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.254", 9))  # no packet is sent: the kernel picks the outgoing address
            found = s.getsockname()[0]
        except OSError:
            return None
    return None if ipaddress.ip_address(found).is_loopback else str(found)


H = TypeVar("H", bound="Hostile")


def served_and_registered(lti: Lti, kind: type[H]) -> Iterator[H]:
    """A hostile LMS of ``kind`` on 127.0.0.1 (plain http, as the tool allows on loopback),
    served in a thread and registered with the tool, for as long as the generator lives."""
    port = free_port()
    lms = kind(f"http://127.0.0.1:{port}")
    with _Served(lms.app(), "127.0.0.1", port):
        with transaction(lti.state.session_factory) as session:
            add_platform(session, lms.registration())
        yield lms


@pytest.fixture(scope="module")
def hostile(lti: Lti) -> Iterator[Hostile]:
    """A hostile LMS on 127.0.0.1 (plain http, as the tool allows on loopback), registered."""
    yield from served_and_registered(lti, Hostile)


@pytest.fixture(scope="module", autouse=True)
def people(lti: Lti) -> None:
    lti.platform.people(PEOPLE, CONTEXTS)


def tool_login(browser: httpx.Client, lti: Lti, evil: Hostile) -> tuple[str, str]:
    """The tool's login for ``evil``, as anyone may start it (state cookie kept): (nonce, state)."""
    login = browser.get(
        f"{lti.tool}/lti/login",
        params={"iss": evil.issuer, "login_hint": "x", "target_link_uri": f"{lti.tool}/lti/launch"},
        follow_redirects=False,
    )
    assert login.status_code == 302, login.text[-400:]
    query = parse_qs(urlsplit(login.headers["location"]).query)
    return query["nonce"][0], query["state"][0]


def hostile_launch(browser: httpx.Client, lti: Lti, evil: Hostile, **claims: Any) -> httpx.Response:
    """A launch as the hostile LMS makes it: the tool's login (state cookie kept), then a token
    it signs itself, posted to the tool."""
    nonce, state = tool_login(browser, lti, evil)
    return browser.post(f"{lti.tool}/lti/launch", data={"id_token": evil.sign(evil.claims(nonce, **claims)), "state": state})


def forged_launch(browser: httpx.Client, lti: Lti, evil: Hostile, kid: str, key: RSAKey) -> httpx.Response:
    """An outsider's launch: a free login for ``evil``, then a token signed by ``key`` (no LMS's)
    naming the key ``kid``."""
    nonce, state = tool_login(browser, lti, evil)
    token = jwt.encode({"alg": "RS256", "kid": kid}, evil.claims(nonce), key)
    return browser.post(f"{lti.tool}/lti/launch", data={"id_token": token, "state": state})


def signed_in(browser: httpx.Client, lti: Lti, answer: httpx.Response) -> httpx.Response:
    found = re.search(r'href="(/lti/continue/[^"]+)"', answer.text)
    assert found, answer.text[-600:]
    return browser.get(lti.tool + unescape(found.group(1)))


def roster_button(browser: httpx.Client, lti: Lti, course: str) -> httpx.Response:
    """The course LTI page's "pull the roster" button, pressed by its signed-in instructor; once
    pressed (a 303 back to the page), the background job's sync is waited for
    (:func:`roster_outcome` says how it went)."""
    pressed = lms_page_button(browser, lti, course, "roster")
    if pressed.status_code == 303:
        finished_request(lti, course, "roster")
    return pressed


def roster_outcome(lti: Lti, course: str) -> tuple[str, str]:
    """How the course's last roster sync went: ("done" | "failed", what the page says)."""
    return finished_request(lti, course, "roster")


def _count(lti: Lti, query: Any) -> int:
    with lti.state.session_factory() as session:
        return int(session.scalar(query) or 0)


def _hostile_course(browser: httpx.Client, lti: Lti, evil: Hostile, context: str) -> str:
    """The hostile LMS's instructor opens ``context``; returns the tool course's slug."""
    answer = hostile_launch(browser, lti, evil, sub=f"h-prof-{context}", context=context)
    assert answer.status_code == 200, answer.text[-400:]
    page = signed_in(browser, lti, answer)
    assert page.status_code == 200
    return str(page.url.params["course"])


@pytest.fixture(scope="module")
def course_l1(lti: Lti) -> str:
    """The real LMS's course L1, opened by its instructor, Ada and Mallory in it."""
    for user in ("prof", "ada", "mal"):
        with lti.client() as browser:
            page = lti_continue(browser, lti.tool, launch(browser, lti.platform, user=user, context="L1"))
            assert page.status_code == 200, page.text[-400:]
    return "rlhf-201"


def test_the_hostile_lms_harness_launches_and_signs_in(lti: Lti, hostile: Hostile) -> None:
    """Not an attack: the hostile LMS is a working platform, so the xfails below fail for the
    attack's reason, not the harness's."""
    with lti.client() as browser:
        slug = _hostile_course(browser, lti, hostile, "HC0")
        assert slug.startswith("hostile-hc0")


# --- session fixation / login CSRF ------------------------------------------------------------


def test_a_sign_in_link_only_signs_in_the_browser_that_launched(lti: Lti, course_l1: str) -> None:
    with lti.client() as attacker:
        done = launch(attacker, lti.platform, user="mal", context="L1")  # Mallory keeps her link unused
        assert done.response.status_code == 200
    with lti.client() as victim:  # Ada, signed in as herself, opens the link Mallory sent her
        lti_continue(victim, lti.tool, launch(victim, lti.platform, user="ada", context="L1"))
        page = lti_continue(victim, lti.tool, done)
        me = victim.get(f"{lti.tool}/dashboard/terminal")
    assert "Signed in as Mallory" not in page.text + me.text  # Ada now works (and submits) as Mallory


# --- privilege escalation ---------------------------------------------------------------------


def _token_of(browser: httpx.Client, lti: Lti) -> str:
    terminal = browser.get(f"{lti.tool}/dashboard/terminal")
    csrf = re.search(r'name="csrf" value="([^"]+)"', terminal.text).group(1)  # type: ignore[union-attr]
    made = browser.post(f"{lti.tool}/dashboard/terminal", data={"csrf": csrf}, headers={"Origin": lti.tool})
    return re.search(r'<pre id="new-token"><code>(ppg_[^<]+)</code>', made.text).group(1)  # type: ignore[union-attr]


def test_an_instructor_made_by_one_lms_cannot_list_the_users_of_another(lti: Lti, hostile: Hostile, course_l1: str) -> None:
    with lti.client() as browser:
        _hostile_course(browser, lti, hostile, "HC-users")
        token = _token_of(browser, lti)
    users = httpx.get(f"{lti.tool}/api/v1/users", headers={"Authorization": f"Bearer {token}"}, verify=str(lti.cert))
    names = {u["name"] for u in users.json()} if users.status_code == 200 else set()
    assert not names & {"ada", "ghopper", "mal"}, sorted(names)


def test_a_teaching_assistant_elsewhere_gains_nothing_over_the_course_they_learn_in(lti: Lti, course_l1: str) -> None:
    with lti.client() as browser:
        lti_continue(browser, lti.tool, launch(browser, lti.platform, user="ada", context="L9"))  # a TA of PY-101
        token = _token_of(browser, lti)
    users = httpx.get(f"{lti.tool}/api/v1/users", headers={"Authorization": f"Bearer {token}"}, verify=str(lti.cert))
    names = {u["name"] for u in users.json()} if users.status_code == 200 else set()
    assert "mal" not in names  # Mallory is Ada's classmate in RLHF-201, where Ada is a learner


# --- outsider's storage -----------------------------------------------------------------------


def test_an_outsiders_burst_of_logins_is_not_stored_in_full(lti: Lti) -> None:
    before = _count(lti, select(func.count()).select_from(LtiLogin))
    with lti.client() as outsider:
        for _ in range(120):
            outsider.get(
                f"{lti.tool}/lti/login",
                params={"iss": lti.platform.url, "login_hint": "anyone", "target_link_uri": f"{lti.tool}/lti/launch"},
                follow_redirects=False,
            )
    assert _count(lti, select(func.count()).select_from(LtiLogin)) - before < 60


# --- a hostile LMS's roster (NRPS) and token answers ---------------------------------------------


@pytest.fixture
def evil(hostile: Hostile) -> Iterator[Hostile]:
    """The module's hostile LMS, its answers reset after the test."""
    yield hostile
    hostile.roster = Hostile.roster  # type: ignore[assignment]
    hostile.access_token = "hostile-access-token"
    hostile.refuse_scores = {}
    hostile.jwks_status = 200
    hostile.lineitems_body = b"[]"


def _member(sub: str, name: str, roles: list[str] | None = None) -> dict[str, Any]:
    return {"user_id": sub, "name": name, "roles": roles or [LEARNER], "status": "Active"}


def _page(members: list[dict[str, Any]], next_page: int | None, evil: Hostile) -> tuple[bytes, str]:
    link = f'<{evil.url}/nrps?page={next_page}>; rel="next"' if next_page is not None else ""
    return json.dumps({"id": f"{evil.url}/nrps", "members": members}).encode(), link


def test_a_roster_cut_at_the_page_limit_drops_nobody(lti: Lti, evil: Hostile) -> None:
    with lti.client() as late:  # a learner who launched, on the roster's last page
        assert hostile_launch(late, lti, evil, sub="h-late", roles=[LEARNER], context="HC-pages").status_code == 403
    with lti.client() as browser:
        slug = _hostile_course(browser, lti, evil, "HC-pages")
        with lti.client() as late:
            assert hostile_launch(late, lti, evil, sub="h-late", roles=[LEARNER], context="HC-pages").status_code == 200
        pages = 101  # Canvas pages NRPS at 10 by default: a course of about a thousand
        prof = _member("h-prof-HC-pages", "Prof", [STAFF])

        def roster(page: int) -> tuple[bytes, str]:
            members = [prof, _member(f"h-r{page}", f"R{page}")] + ([_member("h-late", "Late")] if page == pages - 1 else [])
            return _page(members, page + 1 if page < pages - 1 else None, evil)

        evil.roster = roster
        assert roster_button(browser, lti, slug).status_code == 303
    with lti.state.session_factory() as session:
        late = session.scalar(select(LtiUser).where(LtiUser.sub == "h-late"))
        assert late is not None
        status = session.scalar(select(LtiMember.status).where(LtiMember.user_id == late.user_id))
    # listed as Active by the LMS: a safe sync keeps them, or refuses the cut roster (failed, nothing changed)
    state, said = roster_outcome(lti, slug)
    assert state == "failed" or status == "active", (state, said, status)


def test_an_lms_that_answers_an_error_gets_the_lms_error_page(lti: Lti, evil: Hostile) -> None:
    with lti.client() as browser:
        slug = _hostile_course(browser, lti, evil, "HC-down")
        evil.roster = lambda _n: (b"{}", "")  # not a roster: LmsUnreachable, as for a 503
        answer = roster_button(browser, lti, slug)
        page = browser.get(f"{lti.tool}/dashboard/lti", params={"course": slug})
    state, said = roster_outcome(lti, slug)
    assert answer.status_code == 303 and state == "failed" and "Nothing was changed" in said, (state, said)
    assert 'id="lti-task-roster" data-state="failed"' in page.text and "Nothing was changed" in page.text


def _sync_roster_cli(lti: Lti, slug: str) -> str:
    done = lti.cli("lti", "sync-roster", slug)
    return done.stdout + done.stderr


def test_a_deeply_nested_roster_answer_is_an_lms_error(lti: Lti, evil: Hostile) -> None:
    with lti.client() as browser:
        slug = _hostile_course(browser, lti, evil, "HC-deep")
    evil.roster = lambda _n: (b'{"members": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "")
    said = _sync_roster_cli(lti, slug)
    assert "127.0.0.1" in said and "not JSON" in said, said[-600:]


def test_a_non_ascii_access_token_is_an_lms_error(lti: Lti, evil: Hostile) -> None:
    with lti.client() as browser:
        slug = _hostile_course(browser, lti, evil, "HC-token")
    evil.access_token = "t\u00f6ken"
    said = _sync_roster_cli(lti, slug)
    assert "access token" in said and "Traceback" not in said and "internal" not in said.lower(), said[-600:]


def test_a_roster_with_many_similar_names_syncs(lti: Lti, evil: Hostile) -> None:
    with lti.client() as browser:
        slug = _hostile_course(browser, lti, evil, "HC-names")
        # "q_x" is a LIKE pattern too: the 1000 names it matches first (q0x0000 ... sort before it)
        # hide the "q_x" made for the first namesake from the second
        members = [_member(f"h-q{n}", f"q0x{n:04d}") for n in range(1000)] + [_member("h-qa", "q_x"), _member("h-qb", "q_x")]
        evil.roster = lambda _n: _page(members, None, evil)
        answer = roster_button(browser, lti, slug)
    assert answer.status_code == 303, (answer.status_code, answer.text[-300:])
    assert _count(lti, select(func.count()).select_from(LtiUser).where(LtiUser.sub.in_(["h-qa", "h-qb"]))) == 2


# --- SSRF: service URLs of a launch naming this machine -------------------------------------------


@dataclass
class Remote:
    """A hostile LMS on this machine's outside address (to the tool, a remote LMS, over https),
    and an internal https service on loopback that no LMS may reach through the tool."""

    evil: Hostile
    internal_port: int
    internal_hits: list[str]


@pytest.fixture
def remote(lti: Lti, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Remote]:
    outside = _outside_address()
    if outside is None:
        pytest.skip("this machine has no address but loopback")
    cert, key = _certificate(tmp_path, [outside, "127.0.0.1", "0.0.0.0", "::ffff:127.0.0.1"])
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the tool trusts the hostile LMS's certificate, as a CA's
    port, internal_port = free_port(), free_port()
    evil = Hostile(f"https://{outside}:{port}")
    hits: list[str] = []
    internal = FastAPI()

    @internal.api_route("/{rest:path}", methods=["GET", "POST"])
    def secret(rest: str, request: Request) -> Response:
        hits.append(f"{request.method} /{rest} {request.headers.get('authorization', '')}")
        return JSONResponse({"members": []})

    with _Served(evil.app(), outside, port, cert, key), _Served(internal, "127.0.0.1", internal_port, cert, key):
        with transaction(lti.state.session_factory) as session:
            add_platform(session, evil.registration())
        yield Remote(evil, internal_port, hits)


@pytest.mark.parametrize("host", ["0.0.0.0", "[::ffff:127.0.0.1]"])
def test_a_remote_lms_cannot_send_the_tool_to_a_service_on_this_machine(lti: Lti, remote: Remote, host: str) -> None:
    url = f"https://{host}:{remote.internal_port}/internal/admin"
    with lti.client() as browser:
        answer = hostile_launch(
            browser, lti, remote.evil, sub="h-ssrf", context=f"HC-ssrf-{host}",
            **{c.NRPS: {"context_memberships_url": url, "service_versions": ["2.0"]}},
        )
        assert answer.status_code == 200, answer.text[-400:]
        page = signed_in(browser, lti, answer)
        roster_button(browser, lti, str(page.url.params["course"]))
    assert remote.internal_hits == []


def test_the_loopback_control_holds_for_127_0_0_1(lti: Lti, remote: Remote) -> None:
    """Not an attack: the same launch naming 127.0.0.1 is refused, so the xfail above shows a
    bypass of the check, not its absence."""
    url = f"https://127.0.0.1:{remote.internal_port}/internal/admin"
    with lti.client() as browser:
        answer = hostile_launch(
            browser, lti, remote.evil, sub="h-ssrf", context="HC-ssrf-control",
            **{c.NRPS: {"context_memberships_url": url, "service_versions": ["2.0"]}},
        )
        page = signed_in(browser, lti, answer)
        roster_button(browser, lti, str(page.url.params["course"]))
    assert remote.internal_hits == []


# --- grades (AGS) -----------------------------------------------------------------------------


def _hostile_learners(lti: Lti, evil: Hostile, context: str, subs: list[str]) -> str:
    with lti.client() as browser:
        slug = _hostile_course(browser, lti, evil, context)
    for sub in subs:
        with lti.client() as browser:
            assert hostile_launch(browser, lti, evil, sub=sub, roles=[LEARNER], context=context, name=sub).status_code == 200
    return slug


def test_one_learner_the_lms_refuses_does_not_block_the_others_grades(lti: Lti, evil: Hostile) -> None:
    slug = _hostile_learners(lti, evil, "HC-ags", ["aaron", "bella"])
    with transaction(lti.state.session_factory) as session:
        course = session.scalar(select(Course).where(Course.slug == slug))
        assert course is not None
        publish(session, course, "actor-loss")
        for login in ("aaron", "bella"):  # login names made from the LMS names
            override(session, course, login, "actor-loss", 80, "by hand", "prof")
    evil.refuse_scores = {"aaron": 422}  # e.g. withdrew in the LMS, not yet synced here
    for _ in range(3):  # the first apply and two retries, as the background job makes them
        lti.cli("lti", "grades", "apply", slug)
    assert [s["userId"] for s in evil.scores if s["lineitem"] == "actor-loss"] == ["bella"]


def test_nothing_of_a_hidden_until_due_exercise_reaches_the_lms_before_the_due_date(lti: Lti, evil: Hostile) -> None:
    slug = _hostile_learners(lti, evil, "HC-held", ["dave", "erin"])
    with transaction(lti.state.session_factory) as session:
        course = session.scalar(select(Course).where(Course.slug == slug))
        assert course is not None
        publish(session, course, "critic-loss", due_at=utcnow() + timedelta(days=7), feedback_policy="hidden-until-due")
        override(session, course, "dave", "critic-loss", 0, "copied the exam", "prof")  # an exam graded by hand
        excuse(session, course, "erin", "critic-loss", "medical certificate", "prof")
    lti.cli("lti", "grades", "apply", slug)
    assert [(s["userId"], s.get("comment")) for s in evil.scores if s["lineitem"] == "critic-loss"] == []


# --- an outsider and the LMS's key set ----------------------------------------------------------


def test_an_outsider_cannot_make_the_tool_fetch_a_failing_key_set_at_will(lti: Lti, evil: Hostile) -> None:
    with transaction(lti.state.session_factory) as session:
        row = session.scalar(select(LtiPlatform).where(LtiPlatform.issuer == evil.issuer))
        assert row is not None
        row.jwks_miss_at = None
    evil.jwks_status = 503  # the LMS's key set is down (or slow: each fetch holds a worker up to 15 s)
    fetches = sum(1 for hit in evil.hits if hit[1].startswith("/jwks"))
    other = RSAKey.generate_key(2048, auto_kid=True)
    for n in range(10):
        with lti.client() as outsider:  # the login is free; the token is made up, signed by no LMS
            forged_launch(outsider, lti, evil, f"made-up-{n}", other)
    assert sum(1 for hit in evil.hits if hit[1].startswith("/jwks")) - fetches <= 2


def test_a_malformed_gradebook_answer_is_recorded_and_retried_later(lti: Lti, evil: Hostile) -> None:
    slug = _hostile_learners(lti, evil, "HC-auto", ["fay"])
    evil.lineitems_body = b"[" * 100_000 + b"]" * 100_000
    sync = lti.state.lti
    assert sync is not None
    with transaction(lti.state.session_factory) as session:
        course = session.scalar(select(Course).where(Course.slug == slug))
        assert course is not None
        publish(session, course, "actor-loss")
        override(session, course, "fay", "actor-loss", 75, "by hand", "prof")
        link = session.scalar(select(LtiContext).where(LtiContext.course_id == course.id))
        assert link is not None
        link_id, before = link.id, sync.jobs_run
        link.auto_grades = True
    deadline = time.monotonic() + 60
    while sync.jobs_run < before + 3 and time.monotonic() < deadline:  # three jobs: three polls
        time.sleep(0.05)
    with transaction(lti.state.session_factory) as session:
        link = session.get(LtiContext, link_id)
        assert link is not None
        state = (link.sync_error, link.next_sync_at)
        link.auto_grades = False
    assert state[0] is not None and state[1] is not None, state  # shown on the LTI page, retried in 30 s


# --- a hostile LMS's launch claims ----------------------------------------------------------------

_LONE = "\ud800"  # a lone surrogate: valid JSON ("\\ud800"), not storable text
_HOSTILE_CLAIMS = {
    "deep-json": None,  # the payload nested 3000 deep
    "context-title": {c.CONTEXT: {"id": "HC-t", "title": "T" + _LONE, "label": "t"}},
    "context-id": {c.CONTEXT: {"id": "C" + _LONE, "title": "t", "label": "t"}},
    "role": {c.ROLES: [STAFF, "R" + _LONE], c.CONTEXT: {"id": "HC-r", "title": "t", "label": "r"}},
    "sub": {"sub": "s" + _LONE},
}


@pytest.mark.parametrize("case", list(_HOSTILE_CLAIMS))
def test_hostile_launch_claims_are_refused_with_a_page(lti: Lti, hostile: Hostile, case: str) -> None:
    with lti.client() as browser:
        login = browser.get(
            f"{lti.tool}/lti/login",
            params={"iss": hostile.issuer, "login_hint": "x", "target_link_uri": f"{lti.tool}/lti/launch"},
            follow_redirects=False,
        )
        query = parse_qs(urlsplit(login.headers["location"]).query)
        body = hostile.claims(query["nonce"][0], sub=f"h-claims-{case}")
        extra = _HOSTILE_CLAIMS[case]
        if extra is None:
            raw = json.dumps(body)[:-1] + ', "x": ' + "[" * 3000 + "]" * 3000 + "}"
        else:
            raw = json.dumps({**body, **extra})  # ensure_ascii: the surrogate travels escaped, as JSON allows
        token = jws.serialize_compact({"alg": "RS256", "kid": hostile.key.kid}, raw.encode(), hostile.key)
        answer = browser.post(f"{lti.tool}/lti/launch", data={"id_token": token, "state": query["state"][0]})
    assert 400 <= answer.status_code < 500 and 'id="lti-refused"' in answer.text, (answer.status_code, answer.text[:200])


def test_a_score_past_its_due_date_is_sent_whatever_another_course_hides(lti: Lti, evil: Hostile) -> None:
    a = _hostile_learners(lti, evil, "HC-held-a", ["gus"])
    b = _hostile_learners(lti, evil, "HC-held-b", ["gus"])
    with transaction(lti.state.session_factory) as session:
        course_a = session.scalar(select(Course).where(Course.slug == a))
        course_b = session.scalar(select(Course).where(Course.slug == b))
        gus = session.scalar(select(User).where(User.name == "gus"))
        assert course_a is not None and course_b is not None and gus is not None
        publish(session, course_a, "critic-loss", due_at=utcnow() - timedelta(days=1), feedback_policy="hidden-until-due")
        publish(session, course_b, "critic-loss", due_at=utcnow() + timedelta(days=7), feedback_policy="hidden-until-due")
        override(session, course_a, "gus", "critic-loss", 90, "by hand", "prof")  # released in A: due a day ago
        token = issue_token(session, gus, SECRET.encode())
    submitted = httpx.post(  # Gus works on the same exercise in B, where it is due next week
        f"{lti.tool}/api/v1/submissions",
        json={"exercise": "critic-loss", "source": "def f():\n    return 1\n", "course": b},
        headers={"Authorization": f"Bearer {token}"},
        verify=str(lti.cert),
        timeout=30,
    )
    assert submitted.status_code in (201, 202), submitted.text
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with lti.state.session_factory() as session:
            row = session.get(Submission, int(submitted.json()["id"]))
            if row is not None and row.status == "done":
                break
        time.sleep(0.05)
    lti.cli("lti", "grades", "apply", a)
    assert [s["userId"] for s in evil.scores if s["lineitem"] == "critic-loss"] == ["gus"]


# --- noticed by the fixers (issue 35): no test of the red team's ----------------------------------


def _deep_linking(evil: Hostile, return_url: str) -> dict[str, Any]:
    return {
        c.MESSAGE_TYPE: c.DEEP_LINKING_REQUEST,
        c.DEEP_LINKING_SETTINGS: {
            "deep_link_return_url": return_url,
            "accept_types": ["ltiResourceLink"],
            "accept_multiple": True,
        },
    }


@pytest.mark.parametrize(
    "return_url",
    [
        "https://elsewhere.example/steal",  # another site: the signed answer would go there
        "javascript:alert(1)",
        "http://127.0.0.1:1/x; script-src *",  # not a URL; and a header injection if copied
        "https://127.0.0.2/x",  # not the LMS's host
    ],
)
def test_a_deep_linking_return_url_off_the_lms_is_refused(lti: Lti, hostile: Hostile, return_url: str) -> None:
    with lti.client() as browser:
        answer = hostile_launch(
            browser, lti, hostile, sub="h-dl", context="HC-dl", **_deep_linking(hostile, return_url)
        )
    assert 400 <= answer.status_code < 500 and 'id="lti-refused"' in answer.text, (
        answer.status_code,
        answer.text[:200],
    )
    assert "elsewhere" not in answer.headers.get("content-security-policy", "")


def test_a_deep_linking_return_url_of_the_lms_opens_the_picker(lti: Lti, hostile: Hostile) -> None:
    with lti.client() as browser:
        answer = hostile_launch(
            browser, lti, hostile, sub="h-dl", context="HC-dl", **_deep_linking(hostile, f"{hostile.url}/dl/return?x=1")
        )
    assert answer.status_code == 200 and 'id="lti-picker"' in answer.text, answer.text[-300:]


def test_the_canvas_configuration_never_names_the_host_header(lti: Lti) -> None:
    answer = httpx.get(
        f"{lti.tool}/lti/config.json", headers={"Host": "evil.example"}, verify=str(lti.cert), timeout=30
    )
    assert "evil.example" not in answer.text
    assert answer.status_code == 404 and "PPO_GRADER_PUBLIC_URL" in answer.text  # not configured here


def test_the_canvas_configuration_names_the_configured_public_url() -> None:
    from server.config import Settings
    from server.lti.router import canvas_config

    answer = canvas_config(Settings(PUBLIC_URL="https://grader.example.edu/", SECRET_KEY=SECRET))  # type: ignore[arg-type]
    body = json.loads(bytes(answer.body))
    assert body["oidc_initiation_url"] == "https://grader.example.edu/lti/login"
    assert body["target_link_uri"] == "https://grader.example.edu/lti/launch"


def test_an_lms_instructor_reaches_no_default_course_page(lti: Lti, hostile: Hostile) -> None:
    """Course-scoped staff: the default course (every learner enrolled nowhere) is not theirs,
    neither by name nor by a form that names no course."""
    with lti.client() as browser:
        _hostile_course(browser, lti, hostile, "HC-default")
        run = browser.post(
            f"{lti.tool}/dashboard/similarity/run", data={}, headers={"Origin": lti.tool}, follow_redirects=False
        )
        named = browser.get(f"{lti.tool}/dashboard", params={"course": "default"})
        mine = browser.get(f"{lti.tool}/dashboard")
    assert run.status_code == 404 and named.status_code == 404, (run.status_code, named.status_code)
    assert mine.status_code == 200 and "hostile-hc-default" in mine.text
