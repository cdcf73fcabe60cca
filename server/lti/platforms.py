"""Platform registrations: who may launch the tool, and the keys their launches are signed with.

A registration is what an administrator copies from the LMS (``ppo-grader lti add-platform``
or ``POST /api/v1/lti/platforms``): the issuer, the client id the LMS gave the tool, its
deployment ids, and three URLs (OIDC authorization, OAuth2 token, JWKS). Each URL must be
https (loopback aside: ``server.lti.http``).

The platform's key set is cached in its row. :func:`platform_key` returns the key a token's
``kid`` names; a ``kid`` the cache lacks makes one refresh, unless a refresh in the last
:data:`MISS_COOLDOWN` did not find an unknown ``kid`` or failed (the LMS down, slow, or
answering garbage): ``jwks_miss_at``. The refresh is claimed before it is fetched (one
conditional UPDATE of ``jwks_miss_at``, committed: :func:`_claim_refresh`), so launches at once
(threads or API processes) make one fetch between them; the others read the set as cached (a
kid it lacks: refused as an unknown key). So an outsider's launches with made-up key ids cost
at most one fetch a minute per platform, however many arrive together and whether the key set
answers or not; a real key rotation is found at the first launch (or the first after a
cooldown an outsider started), and a refresh that finds its key gives the cooldown back.

The cache has a maximum age (:data:`JWKS_MAX_AGE`, the ``LTI_JWKS_MAX_AGE_SECONDS`` setting):
a launch that finds it older refreshes it the same way (claimed, so a burst makes one fetch),
so a key the LMS took out of its set stops verifying within that long; a launch that loses the
claim meanwhile uses the set as cached, unless it is older than twice the limit: then it waits
for the refresh in flight (:func:`_await_refresh`, at most :data:`REFRESH_WAIT` from the claim,
no fetch of its own, no database connection held while it waits) and verifies with the set it
stored; refused (502) if that refresh failed, took longer, or none is in flight. At most
:data:`MAX_REFRESH_WAITERS` launches of a platform wait at once (per process); the others are
refused at once (503, ``Retry-After``), so a burst of launches (forged ones need no key: the
wait comes before the signature) holds a few worker threads, never all of them. A launch whose signature the cached keys do not verify makes
one refresh too (:func:`rotated_key`, claimed as a miss: an LMS that rotated its key under the
same ``kid``), and is verified again with the keys the set now names, if they are others. A set
may list several keys under one ``kid`` (a rotation's overlap): each is tried, at most
:data:`MAX_KEYS_PER_KID`.

A registration's URLs can be wrong (a typo, an LMS moved): each failed call to the platform's
own token or key set URL is kept on its row (:func:`service_failed`: which one, when, a
message capped at :data:`FAILURE_CHARS`), shown by ``ppo-grader lti platforms`` and on the
course's LMS page, and cleared by that service's next success (:func:`service_worked`). The
authorization (OIDC auth) URL is the browser's to open, never the tool's: a wrong one shows in
the instructor's browser, at the LMS, not here.

What is cached is what can verify a launch (:func:`kept_key_set`): RSA public keys of
:data:`MIN_RSA_BITS` to :data:`MAX_RSA_BITS` bits for signatures, their public members only;
every other key of the set is kept as its ``kid`` and why it is refused, so a launch it signed
is refused by name ("Signing key refused"). A set of more than :data:`MAX_KEYS` keys, or whose
kept text is over :data:`MAX_JWKS_CHARS`, is ``LmsUnreachable`` and nothing is stored.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from joserfc.errors import JoseError
from joserfc.jwk import KeySet, RSAKey
from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from server.lti.errors import (
    InvalidRegistration,
    LaunchRefused,
    LmsUnreachable,
    PlatformAlreadyExists,
    PlatformNotFound,
)
from server.lti.http import TIMEOUT, call, checked_url
from server.models import LtiContext, LtiDeployment, LtiPlatform, utcnow
from server.text_guard import is_storable_text

MISS_COOLDOWN = timedelta(seconds=60)
#: How long a cached key set verifies launches before it is fetched again (the default of the
#: ``LTI_JWKS_MAX_AGE_SECONDS`` setting): a key the LMS took out of its set stops verifying
#: within this long.
JWKS_MAX_AGE = timedelta(hours=6)
#: The platform's services whose failures are kept (``LtiPlatform.failed_service``), as people read them.
TOKEN, JWKS = "token", "jwks"
SERVICE_NAMES = {TOKEN: "token URL", JWKS: "key set (JWKS) URL"}
#: Longest failure message kept on a platform.
FAILURE_CHARS = 300
#: Most keys a platform's set may hold (more: the set is refused, nothing kept).
MAX_KEYS = 20
#: Most keys listed under one ``kid`` that a launch's signature is tried with (an LMS rotating
#: its key under a fixed ``kid`` lists the old and the new side by side for the overlap).
MAX_KEYS_PER_KID = 4
#: Longest a launch that lost the refresh claim of a set too old to use waits for that refresh,
#: counted from the claim: the fetch's own deadline (``server.lti.http.TIMEOUT``), and a moment
#: for the launch that fetches to store what it read.
REFRESH_WAIT = timedelta(seconds=(TIMEOUT.read or 15.0) + 2.0)
#: How often a waiting launch reads the platform's row again.
REFRESH_POLL_SECONDS = 0.2
#: Most launches of one platform that wait for its key-set refresh at once, in one process
#: (:func:`_await_refresh`): each holds a worker thread meanwhile. The others are refused at
#: once (503, ``Retry-After``: :data:`BUSY_RETRY_SECONDS`).
MAX_REFRESH_WAITERS = 4
#: When a launch refused for the waiters being full is told to try again (seconds).
BUSY_RETRY_SECONDS = 20
#: Most characters of the key set kept in a platform's row (what a launch reads back).
MAX_JWKS_CHARS = 64 * 1024
#: RSA moduli a launch may be verified with: under 2048 bits a key is factorable (a 512-bit
#: one in hours); over 8192 bits nobody's key, only a cost (to store and to verify with).
MIN_RSA_BITS, MAX_RSA_BITS = 2048, 8192
#: The members of an RSA public key kept (and each value's longest text).
_KEPT = {"kty": 8, "kid": 200, "alg": 16, "use": 16, "n": MAX_RSA_BITS // 6 + 4, "e": 12}

T = TypeVar("T")


@dataclass(frozen=True)
class Registration:
    """What an administrator enters for a platform."""

    name: str
    issuer: str
    client_id: str
    auth_login_url: str
    auth_token_url: str
    jwks_url: str
    deployment_ids: tuple[str, ...] = ()


def _text(value: str, what: str, longest: int = 255) -> str:
    value = value.strip()
    if not value or len(value) > longest or not value.isprintable() or not is_storable_text(value):
        raise InvalidRegistration(f"The {what} must be 1-{longest} printable characters.")
    return value


def add_platform(session: Session, reg: Registration) -> LtiPlatform:
    """Record a platform and its deployments (the caller commits)."""
    issuer = _text(reg.issuer, "issuer", 2000)
    client_id = _text(reg.client_id, "client id")
    if session.scalar(select(LtiPlatform.id).where(LtiPlatform.issuer == issuer, LtiPlatform.client_id == client_id)):
        raise PlatformAlreadyExists(
            f"A platform with issuer {issuer!r} and client id {client_id!r} is registered already."
        )
    platform = LtiPlatform(
        name=_text(reg.name or issuer, "name", 200),
        issuer=issuer,
        client_id=client_id,
        auth_login_url=checked_url(reg.auth_login_url, "authorization (OIDC auth) URL"),
        auth_token_url=checked_url(reg.auth_token_url, "token URL"),
        jwks_url=checked_url(reg.jwks_url, "key set (JWKS) URL"),
    )
    session.add(platform)
    session.flush()
    for deployment in reg.deployment_ids:
        add_deployment(session, platform, deployment)
    return platform


def add_deployment(session: Session, platform: LtiPlatform, deployment_id: str) -> bool:
    """Accept launches from ``deployment_id`` of ``platform``; False if it was already accepted."""
    value = _text(deployment_id, "deployment id")
    exists = session.scalar(
        select(LtiDeployment.id).where(LtiDeployment.platform_id == platform.id, LtiDeployment.deployment_id == value)
    )
    if exists is not None:
        return False
    session.add(LtiDeployment(platform_id=platform.id, deployment_id=value))
    session.flush()
    return True


def deployments(session: Session, platform: LtiPlatform) -> list[str]:
    """The platform's registered deployment ids."""
    return list(
        session.scalars(
            select(LtiDeployment.deployment_id)
            .where(LtiDeployment.platform_id == platform.id)
            .order_by(LtiDeployment.id)
        )
    )


def has_deployment(session: Session, platform: LtiPlatform, deployment_id: str) -> bool:
    """Whether launches from ``deployment_id`` are accepted."""
    return (
        session.scalar(
            select(LtiDeployment.id).where(
                LtiDeployment.platform_id == platform.id, LtiDeployment.deployment_id == deployment_id
            )
        )
        is not None
    )


def list_platforms(session: Session) -> list[LtiPlatform]:
    """Every registration, oldest first."""
    return list(session.scalars(select(LtiPlatform).order_by(LtiPlatform.id)))


def find_platform(session: Session, issuer: str, client_id: str | None = None) -> LtiPlatform:
    """The registration for ``issuer`` (and ``client_id``, needed when the issuer has several)."""
    query = select(LtiPlatform).where(LtiPlatform.issuer == issuer)
    if client_id is not None:
        query = query.where(LtiPlatform.client_id == client_id)
    found = list(session.scalars(query.limit(2)))
    if not found:
        raise PlatformNotFound(
            f"No LTI platform is registered with issuer {issuer[:200]!r}"
            + (f" and client id {client_id[:100]!r}." if client_id else ".")
        )
    if len(found) > 1:
        raise PlatformNotFound(
            f"Several registrations have issuer {issuer[:200]!r}; the platform must send its client id."
        )
    return found[0]


def platform_by_name(session: Session, name: str) -> LtiPlatform:
    """A registration by its name, issuer or id (the CLI's way to name one)."""
    rows = list_platforms(session)
    found = [p for p in rows if name in (p.name, p.issuer, str(p.id))]
    if len(found) != 1:
        raise PlatformNotFound(f"No single LTI platform called {name!r}; `ppo-grader lti platforms` lists them.")
    return found[0]


def _cached(platform: LtiPlatform) -> dict[str, Any]:
    if platform.jwks is not None and len(platform.jwks) > MAX_JWKS_CHARS:
        return {}  # kept whole by an earlier version: read as empty, so the next launch refreshes it
    try:
        value = json.loads(platform.jwks or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _by_kid(jwks: dict[str, Any], kid: str) -> list[dict[str, Any]]:
    """The set's keys listed under ``kid``, in the set's order, at most :data:`MAX_KEYS_PER_KID`."""
    keys = jwks.get("keys")
    if not isinstance(keys, list):
        return []
    return [k for k in keys[:MAX_KEYS] if isinstance(k, dict) and k.get("kid") == kid][:MAX_KEYS_PER_KID]


def service_failed(session: Session, platform_id: int, service: str, detail: str, now: datetime) -> None:
    """Keep a failed call to the platform's ``service`` (:data:`TOKEN`, :data:`JWKS`) on its
    row, the message capped (the caller commits)."""
    session.execute(
        update(LtiPlatform)
        .where(LtiPlatform.id == platform_id)
        .values(failed_service=service, failed_at=now, failure=detail[:FAILURE_CHARS])
        .execution_options(synchronize_session="fetch")
    )


def service_worked(session: Session, platform_id: int, service: str) -> bool:
    """Clear the platform's kept failure if it was ``service``'s (a write only then: a read
    otherwise); whether it was cleared (the caller commits)."""
    kept = session.scalar(select(LtiPlatform.failed_service).where(LtiPlatform.id == platform_id))
    if kept != service:
        return False
    session.execute(
        update(LtiPlatform)
        .where(LtiPlatform.id == platform_id, LtiPlatform.failed_service == service)
        .values(failed_service=None, failed_at=None, failure=None)
        .execution_options(synchronize_session="fetch")
    )
    return True


def failure_text(platform: LtiPlatform) -> str | None:
    """What failed last, as people read it (without the time), or None."""
    if platform.failed_service is None:
        return None
    return f"its {SERVICE_NAMES.get(platform.failed_service, platform.failed_service)} failed: {platform.failure or ''}"


def failing_platform(session: Session, course_id: int) -> LtiPlatform | None:
    """The platform of the course's LMS link when it has a failure kept (None: not linked, or
    nothing failed): the course's dashboard names it."""
    return session.scalar(
        select(LtiPlatform)
        .join(LtiContext, LtiContext.platform_id == LtiPlatform.id)
        .where(LtiContext.course_id == course_id, LtiPlatform.failed_service.is_not(None))
    )


def _refused(jwks: dict[str, Any], kid: str) -> str | None:
    """Why the set's key ``kid`` verifies no launch (kept as ``refused``: kid -> a phrase), if it is so."""
    refused = jwks.get("refused")
    reason = refused.get(kid) if isinstance(refused, dict) else None
    return reason if isinstance(reason, str) else None


def _modulus_bits(n: str) -> int | None:
    """The bit length of a JWK's base64url modulus (None: not base64url)."""
    try:
        return int.from_bytes(base64.urlsafe_b64decode(n + "=" * (-len(n) % 4))).bit_length()
    except (ValueError, binascii.Error):
        return None


def _weakness(key: dict[str, Any]) -> str | None:
    """Why ``key`` (a JWK of the platform's set) can verify no launch, or None: an RSA public
    key of :data:`MIN_RSA_BITS` to :data:`MAX_RSA_BITS` bits, each member a short text."""
    if key.get("kty") != "RSA":  # EC keys (whatever the curve) and others: launches are RS256
        return f"a key of type {str(key.get('kty'))[:8]!r}, not RSA (LTI 1.3 launches are signed with RS256)"
    if key.get("use", "sig") != "sig":
        return f"a key published for {str(key.get('use'))[:16]!r}, not for signatures"
    if key.get("alg", "RS256") != "RS256":
        return f"a key for {str(key.get('alg'))[:16]!r}, not RS256"
    for name, longest in _KEPT.items():
        value = key.get(name)
        if name in ("alg", "use") and value is None:
            continue
        if not isinstance(value, str) or not value or len(value) > longest or not value.isascii():
            if name == "n" and isinstance(value, str) and len(value) > longest:
                return f"an RSA key of more than {MAX_RSA_BITS} bits"
            return f"a key whose {name!r} is not a short ASCII text"
    bits = _modulus_bits(key["n"])
    if bits is None:
        return "a key whose modulus is not base64url"
    if bits < MIN_RSA_BITS:
        return f"an RSA key of {bits} bits (at least {MIN_RSA_BITS} are required: a shorter one can be factored)"
    if bits > MAX_RSA_BITS:
        return f"an RSA key of more than {MAX_RSA_BITS} bits"
    return None


def kept_key_set(body: Any, what: str) -> dict[str, Any]:
    """What is kept of a platform's key set answer: its usable keys (RSA public members only,
    :func:`_weakness`), and for every other key with a usable ``kid`` why it is refused, so a
    launch it signed is refused by name. ``LmsUnreachable`` for an answer with no ``keys``
    list, more than :data:`MAX_KEYS` keys, or a kept text over :data:`MAX_JWKS_CHARS`."""
    if not isinstance(body, dict) or not isinstance(body.get("keys"), list):
        raise LmsUnreachable(f'{what}: the answer has no "keys" list.')
    if len(body["keys"]) > MAX_KEYS:
        raise LmsUnreachable(f"{what}: the set holds more than {MAX_KEYS} keys; none was kept.")
    keys: list[dict[str, Any]] = []
    refused: dict[str, str] = {}
    for key in body["keys"]:
        if not isinstance(key, dict):
            continue
        weakness = _weakness(key)
        if weakness is None:
            keys.append({name: key[name] for name in _KEPT if name in key})
            continue
        kid = key.get("kid")
        if isinstance(kid, str) and 0 < len(kid) <= _KEPT["kid"] and kid.isascii():
            refused[kid] = weakness
    kept = {"keys": keys, "refused": refused}
    if len(json.dumps(kept)) > MAX_JWKS_CHARS:
        raise LmsUnreachable(f"{what}: the keys kept would be more than {MAX_JWKS_CHARS // 1024} KiB; none was kept.")
    return kept


def refresh_jwks(session: Session, platform: LtiPlatform, now: datetime | None = None) -> dict[str, Any]:
    """Fetch the platform's key set now and cache what :func:`kept_key_set` keeps of it
    (``LmsUnreachable`` when it cannot be read or is over a cap: the cache is left as it was,
    and the failure is kept on the platform: :func:`service_failed`)."""
    now = now or utcnow()
    what = f"the key set of {platform.name}"
    try:
        body = kept_key_set(call("GET", platform.jwks_url, what).body, what)
    except LmsUnreachable as exc:
        service_failed(session, platform.id, JWKS, exc.detail, now)
        raise
    service_worked(session, platform.id, JWKS)
    platform.jwks = json.dumps(body)
    platform.jwks_fetched_at = now
    session.flush()
    return body


def _claim_refresh(session: Session, platform: LtiPlatform, now: datetime) -> bool:
    """Whether this request may fetch the platform's key set now: one conditional UPDATE sets
    ``jwks_miss_at`` to ``now`` unless it is within :data:`MISS_COOLDOWN`, committed before
    anything is fetched, so of concurrent launches (threads or API processes, SQLite or
    PostgreSQL) exactly one wins and the others see the cooldown. The platform's row is read
    again either way: a loser sees the key set a winner has stored by now.

    Commits ``session``: the launch has written nothing yet (its nonce is spent after the
    signature verifies), and an uncommitted claim would hold the row's lock, or SQLite's write
    lock, for the whole fetch."""
    claimed = session.execute(
        update(LtiPlatform)
        .where(
            LtiPlatform.id == platform.id,
            or_(LtiPlatform.jwks_miss_at.is_(None), LtiPlatform.jwks_miss_at <= now - MISS_COOLDOWN),
        )
        .values(jwks_miss_at=now)
        .execution_options(synchronize_session=False)
    )
    won = bool(claimed.rowcount == 1)  # type: ignore[attr-defined]
    session.commit()
    session.refresh(platform)
    return won


def cache_age(platform: LtiPlatform, now: datetime) -> timedelta | None:
    """How long ago the platform's cached key set was fetched (None: never, or a set kept by a
    version that did not note it: read as too old)."""
    fetched = platform.jwks_fetched_at
    return None if fetched is None else now - fetched


def _too_old(platform: LtiPlatform, now: datetime, max_age: timedelta) -> bool:
    age = cache_age(platform, now)
    return platform.jwks is not None and (age is None or age > max_age)


def _refresh_in_flight(platform: LtiPlatform, now: datetime) -> bool:
    """Whether another launch claimed a refresh of the platform's key set within
    :data:`REFRESH_WAIT` and has neither stored a set since nor kept a failure of it."""
    claimed, fetched = platform.jwks_miss_at, platform.jwks_fetched_at
    if claimed is None or now - claimed >= REFRESH_WAIT or (fetched is not None and fetched >= claimed):
        return False
    failed = platform.failed_service == JWKS and platform.failed_at is not None and platform.failed_at >= claimed
    return not failed


#: Launches waiting on one platform's key-set refresh now, in this process (:func:`_await_refresh`).
_waiting: dict[int, int] = {}
_waiting_lock = threading.Lock()


def _wait_slot(platform_id: int) -> bool:
    """Take one of the platform's :data:`MAX_REFRESH_WAITERS` places to wait (False: all taken)."""
    with _waiting_lock:
        if _waiting.get(platform_id, 0) >= MAX_REFRESH_WAITERS:
            return False
        _waiting[platform_id] = _waiting.get(platform_id, 0) + 1
        return True


def _free_slot(platform_id: int) -> None:
    with _waiting_lock:
        left = _waiting.get(platform_id, 0) - 1
        if left > 0:
            _waiting[platform_id] = left
        else:
            _waiting.pop(platform_id, None)


def _await_refresh(session: Session, platform: LtiPlatform, now: datetime) -> None:
    """Wait, at most until :data:`REFRESH_WAIT` after its claim, for the refresh another launch
    is making of the platform's key set (:func:`_refresh_in_flight`), reading the row again every
    :data:`REFRESH_POLL_SECONDS`; ``platform`` is then as stored. At most
    :data:`MAX_REFRESH_WAITERS` launches of one platform wait at once (in this process); any
    other is refused at once, 503 with ``Retry-After`` (:data:`BUSY_RETRY_SECONDS`): a burst of
    launches (an outsider's forgeries need no key: the wait comes before the signature) holds
    that many worker threads, not all of them. A waiting launch holds no database connection:
    ``session`` is committed (the launch has written nothing yet; a read transaction kept open
    would not see the other launch's commit on SQLite, and would keep its pooled connection)
    before each sleep, and each read of the row is a transaction that ends at once."""
    claimed = platform.jwks_miss_at
    if claimed is None:
        return
    if not _wait_slot(platform.id):
        session.commit()  # hands the connection back before the refusal is written
        raise LaunchRefused(
            "The LMS's keys are being refreshed",
            f"ppo-grader is reading {platform.name}'s signing keys again just now, and enough launches are "
            f"waiting for them already. Launch again from the LMS in {BUSY_RETRY_SECONDS} seconds.",
            503,
            retry_after=BUSY_RETRY_SECONDS,
        )
    platform_id = platform.id
    try:
        waiting = _refresh_in_flight(platform, now)  # read before the commit: nothing is loaded after it
        session.commit()
        deadline = time.monotonic() + max(0.0, (claimed + REFRESH_WAIT - now).total_seconds())
        while waiting and time.monotonic() < deadline:
            time.sleep(REFRESH_POLL_SECONDS)
            session.refresh(platform)
            waiting = _refresh_in_flight(platform, now)
            session.commit()  # the read ends: no connection is held while this launch sleeps
    finally:
        _free_slot(platform_id)


def platform_key(
    session: Session,
    platform: LtiPlatform,
    kid: str,
    now: datetime | None = None,
    max_age: timedelta = JWKS_MAX_AGE,
) -> list[RSAKey]:
    """The platform's public keys with this ``kid`` (at least one; several when the set lists
    several under it, at most :data:`MAX_KEYS_PER_KID`); refreshes the cache once if it has none,
    or if the cache is older than ``max_age``, and no refresh was claimed within the cooldown
    (see the module's note; commits the claim: :func:`_claim_refresh`). A set older than twice
    ``max_age`` that another launch is refreshing is waited for (:func:`_await_refresh`).
    ``LaunchRefused`` (401) when the platform has no such key, (502) when a set too old to use
    could not be read again."""
    now = now or utcnow()
    found = _by_kid(_cached(platform), kid)
    before = platform.jwks_miss_at
    recently_tried = before is not None and now - before < MISS_COOLDOWN  # seen without a write
    refreshed = False
    if (not found or _too_old(platform, now, max_age)) and not recently_tried:
        if _claim_refresh(session, platform, now):
            try:
                found = _by_kid(refresh_jwks(session, platform, now), kid)
            except LmsUnreachable as exc:  # a failed (or timed-out) fetch counts as a miss: the claim stays
                raise LaunchRefused("The LMS's keys could not be read", exc.detail, 502) from None
            refreshed = True
            if found:
                platform.jwks_miss_at = before  # a real rotation, found: the cooldown is for misses only
                session.flush()
        else:
            found = _by_kid(_cached(platform), kid)  # what a concurrent refresh has stored, if it is over
    if not refreshed and _too_old(platform, now, 2 * max_age) and _refresh_in_flight(platform, now):
        # too old to use, and another launch is reading it again this moment: wait for that
        _await_refresh(session, platform, now)
        found = _by_kid(_cached(platform), kid)
    if found and _too_old(platform, now, 2 * max_age):
        # not refreshed (a fetch failed within the cooldown, or another launch's took too long),
        # and too old even for that: the LMS may have taken this key out long ago
        raise LaunchRefused(
            "The LMS's keys could not be read",
            f"The key set of {platform.name} kept here is too old to verify launches and could not be read "
            "again just now. Launch again in a minute; if this persists, the LMS's key set URL may be wrong.",
            502,
        )
    return _usable(platform, kid, found)


def rotated_key(
    session: Session,
    platform: LtiPlatform,
    kid: str,
    used: list[RSAKey],
    verifies: Callable[[RSAKey], T | None],
    now: datetime | None = None,
) -> T | None:
    """After a launch's signature failed with each cached key ``kid`` names (``used``): the set
    is fetched again, once, in case the LMS rotated its key under the same ``kid``, and the first
    of what ``verifies`` makes of each key it now publishes under ``kid`` that is not one of
    ``used`` (None: no other key, no refresh allowed, or none verifies either). The refresh is
    claimed as a miss (:func:`_claim_refresh`: at most one a :data:`MISS_COOLDOWN` per platform,
    so an outsider's bad signatures cannot make the tool fetch on every request), none is made
    for a set this launch has fetched already, and a key found that verifies gives the cooldown
    back."""
    now = now or utcnow()
    before = platform.jwks_miss_at
    age = cache_age(platform, now)
    if (before is not None and now - before < MISS_COOLDOWN) or (age is not None and age <= timedelta(0)):
        return None
    if _claim_refresh(session, platform, now):
        try:
            found = _by_kid(refresh_jwks(session, platform, now), kid)
        except LmsUnreachable:  # kept on the platform (service_failed); the launch is refused for its signature
            return None
    else:
        found = _by_kid(_cached(platform), kid)  # what a concurrent refresh has stored, if it is over
    tried = [key.as_dict(private=False) for key in used]
    result = None
    for candidate in found:
        if _weakness(candidate) is not None:
            continue
        key = _imported(candidate)
        if key is None or key.as_dict(private=False) in tried:
            continue  # not a key, or one already tried: the signature is bad for it
        result = verifies(key)
        if result is not None:
            break
    if result is not None and platform.jwks_miss_at != before:
        platform.jwks_miss_at = before  # a real rotation under the same kid: the cooldown is for misses only
        session.flush()
    return result


def _imported(found: dict[str, Any]) -> RSAKey | None:
    """The JWK ``found`` as an RSA key (None: not a valid RSA JWK)."""
    try:
        key = KeySet.import_key_set({"keys": [found]}).keys[0]
    except (JoseError, ValueError, TypeError, KeyError):
        return None
    return key if isinstance(key, RSAKey) else None


def _usable(platform: LtiPlatform, kid: str, found: list[dict[str, Any]]) -> list[RSAKey]:
    """The key set's JWKs ``found`` for ``kid`` as keys that may verify a launch (at least one),
    else ``LaunchRefused`` for the first one's fault."""
    cached = _cached(platform)
    if not found and (reason := _refused(cached, kid)) is not None:
        raise _too_weak(platform, kid, reason)
    if not found:
        raise LaunchRefused(
            "Unknown signing key",
            f"The launch was signed with a key ({kid[:80]!r}) that {platform.name} does not publish. "
            "Launch again from the LMS; if this persists, the LMS's key set URL may be wrong.",
            401,
        )
    keys: list[RSAKey] = []
    fault: LaunchRefused | None = None
    for jwk in found:
        key = _imported(jwk)
        reason = _weakness(jwk)  # also for a set cached by an earlier version, whole
        if key is None:
            fault = fault or LaunchRefused(
                "Unusable signing key", f"{platform.name} publishes a key that is not a valid RSA JWK (RS256).", 401
            )
        elif reason is not None:
            fault = fault or _too_weak(platform, kid, reason)
        else:
            keys.append(key)
    if keys:
        return keys
    raise fault or LaunchRefused("Unusable signing key", f"{platform.name} publishes no usable key {kid[:80]!r}.", 401)


def _too_weak(platform: LtiPlatform, kid: str, reason: str) -> LaunchRefused:
    return LaunchRefused(
        "Signing key refused",
        f"{platform.name} signed the launch with {reason} ({kid[:80]!r}), which verifies no launch here. "
        "The LMS's administrator must publish (and sign with) an RSA key of at least 2048 bits.",
        401,
    )
