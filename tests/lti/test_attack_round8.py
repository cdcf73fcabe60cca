"""Eighth white-box red team of LTI 1.3: the attempts of this round that worked, each a test
asserting what a safe tool does (strict xfails until fixed), over real HTTP against the real tool
(``tests/lti/conftest``) and a hostile LMS (``tests/lti/test_redteam.Hostile``, registered with
the tool as an administrator would, every answer the attacker's).

Attacks that worked (fixed since; the tests pass):

- an outsider's burst of launches at once, each with a made-up ``kid``: every one fetches the
  LMS's key set (the one-a-minute cooldown is written only once a fetch is over), so N
  concurrent requests cost N fetches and hold N of the server's worker threads for as long as
  the key set takes to answer (up to 15 s each). Medium: pre-authentication amplification on
  the LMS and exhaustion of the tool's thread pool.
- a key set (or any LMS answer) sent ``Content-Encoding: gzip, gzip``: httpx decodes each
  chunk whole before the 4 MiB cap is checked, so a few KiB become hundreds of MiB in memory
  at once. Medium: a hostile (or compromised) LMS, or anyone who makes the tool refresh its key
  set, exhausts the server's memory for every course.
- a gradebook result whose ``resultScore`` is an integer too large for a float: the compare job
  dies on ``OverflowError`` ("failed inside ppo-grader", a traceback in the log) instead of a
  named LMS error. Low.
- ``GET /lti/jwks`` (public, unauthenticated) decrypts and imports every published private
  key, and the signing key once more, on every request: each import is a full RSA key check
  (~0.1 s of CPU on a loaded 2-core machine), so a few requests a second keep a core busy.
  Medium: pre-authentication CPU exhaustion.

Attempts the tool held (checked by hand this round, most covered by earlier rounds' tests): an
id_token with an embedded ``jwk`` header, ``alg: none``, HS256 keyed with the LMS's public key;
a hostile LMS's state with a token naming the real LMS's issuer; an accepted launch replayed with
its state cookie put back; a token carrying another login's nonce; an unregistered deployment id;
the real instructor's ``sub`` and context id from the hostile LMS (a course and account of its
own, the real dashboard 404); the LMS page's buttons posted with a foreign ``Origin``, without
the CSRF token, or with another session's; future ``iat`` and NaN/Infinity times (joserfc's
NumericDate checks); line items an LMS lists despite the filter (filtered here too); IPv6 zone
and numeric IPv4 hosts (pinned to the resolved address); markup in a refused launch's ``kid``
(escaped). A hostile registered LMS can still sign any browser into one of its own accounts,
replacing the session it held (login CSRF): LTI's trust in the LMS, not counted as a hole.
"""

from __future__ import annotations

import asyncio
import gzip
import threading
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import Response
from joserfc.jwk import RSAKey
from sqlalchemy import select

from server.courses.sets import publish
from server.db import transaction
from server.models import Course, LtiContext, LtiLineItem
from tests.lti.conftest import LEARNER, Lti, finished_request, lms_page_button
from tests.lti.test_redteam import (  # noqa: F401  (module fixtures, used by name)
    Hostile,
    _hostile_course,
    forged_launch,
    hostile_launch,
    people,
    served_and_registered,
)

EXERCISE = "actor-loss"


@dataclass
class Rigged(Hostile):
    """A hostile LMS some of whose paths answer as the attacker rigs them: ``rigged`` maps a
    path to (seconds to wait first, the answer), everything else as :class:`Hostile`."""

    rigged: dict[str, tuple[float, Callable[[], Response]]] = field(default_factory=dict)

    def app(self) -> FastAPI:
        app = super().app()

        @app.middleware("http")
        async def rig(request: Request, call_next: Any) -> Any:
            found = self.rigged.get(request.url.path)
            if found is None:
                return await call_next(request)
            self.hits.append((request.method, request.url.path + "?" + request.url.query, dict(request.headers)))
            await asyncio.sleep(found[0])
            return found[1]()

        return app


@pytest.fixture
def rigged(lti: Lti) -> Iterator[Rigged]:
    yield from served_and_registered(lti, Rigged)


def _jwks_fetches(lms: Hostile) -> int:
    return sum(1 for _method, path, _headers in lms.hits if path.startswith("/jwks"))


def _forge_launch(lti: Lti, lms: Hostile, kid: str, outcomes: list[int]) -> None:
    """An outsider's launch naming ``kid`` (``test_redteam.forged_launch``); its status kept."""
    with lti.client() as outsider:
        outcomes.append(forged_launch(outsider, lti, lms, kid, RSAKey.generate_key(2048)).status_code)


# --- resource exhaustion before authentication: the key set ----------------------------------------


def test_an_outsiders_burst_of_made_up_key_ids_at_once_fetches_the_key_set_once(lti: Lti, rigged: Rigged) -> None:
    """Eight launches at once, each naming a key the LMS never published, while its key set
    takes a second to answer (an LMS under load; a hostile one waits 15 s). Secure: one fetch
    (the others wait for it, or are refused on the cooldown); today every launch fetches."""
    rigged.rigged["/jwks"] = (1.0, lambda: Response(b'{"keys": []}', media_type="application/json"))
    outcomes: list[int] = []
    threads = [threading.Thread(target=_forge_launch, args=(lti, rigged, f"made-up-{n}", outcomes)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert len(outcomes) == 8 and all(code in (401, 429, 502, 503) for code in outcomes), outcomes
    assert _jwks_fetches(rigged) <= 1, _jwks_fetches(rigged)


def _double_gzip(size: int) -> bytes:
    """``size`` spaces, gzipped twice (a few KiB)."""
    return gzip.compress(gzip.compress(b" " * size, compresslevel=9), compresslevel=9)


def test_a_doubly_gzipped_key_set_is_not_inflated_in_memory(lti: Lti, rigged: Rigged) -> None:
    """The key set answers a few KiB that inflate to 64 MiB (``Content-Encoding: gzip, gzip``).
    Secure: the launch is refused (the LMS's keys could not be read) and what the tool holds
    stays near its 4 MiB cap of one answer; today the whole 64 MiB is made in one piece (and copied)."""
    bomb = _double_gzip(64 * 2**20)
    assert len(bomb) < 64 * 1024
    rigged.rigged["/jwks"] = (
        0.0,
        lambda: Response(bomb, media_type="application/json", headers={"Content-Encoding": "gzip, gzip"}),
    )
    outcomes: list[int] = []
    tracemalloc.start()
    try:
        _forge_launch(lti, rigged, "bomb-kid", outcomes)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert outcomes == [502], outcomes
    assert peak < 32 * 2**20, f"{peak / 2**20:.0f} MiB held at once"


# --- the compare job: a gradebook result no float holds --------------------------------------------


def test_a_gradebook_result_too_large_for_a_float_is_a_named_lms_error(lti: Lti, rigged: Rigged) -> None:
    """The LMS's results list a ``resultScore`` of 10**400 (valid JSON: an integer). Secure:
    the comparison fails as the LMS's fault, said so on the page (or reads that result as
    unusable); today it is a crash of the job ("failed inside ppo-grader", a traceback in the
    server log)."""
    with lti.client() as browser:
        slug = _hostile_course(browser, lti, rigged, "R8-BIG")  # its instructor, signed in
        with lti.client() as learner:
            assert hostile_launch(learner, lti, rigged, sub="r8-big", roles=[LEARNER], context="R8-BIG").status_code == 200
        column = f"{rigged.url}/ags/lineitems/{EXERCISE}"
        body = b'[{"userId": "r8-big", "resultScore": 1' + b"0" * 400 + b', "resultMaximum": 100}]'
        rigged.rigged[f"/ags/lineitems/{EXERCISE}/results"] = (0.0, lambda: Response(body, media_type="application/json"))
        with transaction(lti.state.session_factory) as session:
            course = session.scalar(select(Course).where(Course.slug == slug))
            assert course is not None
            publish(session, course, EXERCISE)
            link = session.scalar(select(LtiContext).where(LtiContext.course_id == course.id))
            assert link is not None
            session.add(LtiLineItem(context_id=link.id, exercise=EXERCISE, url=column))
        assert lms_page_button(browser, lti, slug, "compare").status_code == 303
    state, outcome = finished_request(lti, slug, "compare")
    assert state in ("done", "failed") and "inside ppo-grader" not in outcome, outcome


# --- resource exhaustion before authentication: the tool's own key set ------------------------------


def test_the_tools_public_key_set_costs_no_private_key_parse_per_request(lti: Lti, monkeypatch: pytest.MonkeyPatch) -> None:
    """``/lti/jwks`` is public (any outsider, any rate: its Cache-Control binds no one). Each
    GET decrypts and imports every published private key, and the signing key once more,
    each import a full RSA key check (about 0.1 s of CPU on a loaded 2-core machine): a few
    requests a second keep a core busy. Secure: the public set costs no private-key parse
    per request (at most one per key in all, say, when a process first publishes it)."""
    parsed: list[str] = []
    real = RSAKey.import_key.__func__  # type: ignore[attr-defined]

    def counting(cls: type[RSAKey], value: Any, *args: Any, **kwargs: Any) -> RSAKey:
        if isinstance(value, dict) and "d" in value:
            parsed.append(str(value.get("kid")))
        return real(cls, value, *args, **kwargs)  # type: ignore[no-any-return]

    with lti.client() as outsider:
        first = outsider.get(f"{lti.tool}/lti/jwks")  # a first key made, if none was yet
        assert first.status_code == 200
        published = len(first.json()["keys"])
        monkeypatch.setattr(RSAKey, "import_key", classmethod(counting))
        for _ in range(10):
            assert outsider.get(f"{lti.tool}/lti/jwks").status_code == 200
    assert len(parsed) <= published, f"{len(parsed)} private-key parses for 10 requests of {published} key(s)"
