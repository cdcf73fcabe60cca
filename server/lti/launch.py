"""The OIDC third-party login and the validation of a launch (LTI 1.3 core, §5.1; IMS security §5).

1. ``/lti/login``: the platform names itself (``iss``, optionally ``client_id`` and
   ``lti_deployment_id``) and the user (``login_hint``). :func:`begin_login` writes nothing: it
   answers where to send the browser (the platform's authorization URL) with a fresh ``nonce``
   and a ``state`` that carries it, signed: a JWT (HS256, joserfc) under a key derived from
   SECRET_KEY (HKDF, its own ``info``), naming the platform, the nonce and an ``exp`` ten
   minutes on. The router also puts the state in a cookie, binding it to this browser. Anyone
   may begin a login naming a registered LMS, so nothing of it is stored: an outsider's burst
   of logins fills no table and pushes out no one's login in flight.
2. ``/lti/launch``: the platform's auto-submitted form brings ``id_token`` and ``state``.
   :func:`validate_launch` checks, in order, and refuses at the first failure with a
   :class:`~server.lti.errors.LaunchRefused` that says which:

   - the state is ours (its signature verifies) and unexpired;
   - the token's header names RS256 and a ``kid`` the platform publishes (its key set is
     refreshed once on an unknown ``kid``, on a signature the cached key does not verify, and
     when older than its maximum age: ``server.lti.platforms``), and the signature verifies;
     the claims are JSON (no ``NaN`` or ``Infinity``: :class:`StrictJSON`);
   - ``iss`` is the platform's issuer, ``aud`` holds our client id (with several audiences,
     ``azp`` is our client id), ``exp`` has not passed, ``iat`` is not in the future nor older
     than :data:`MAX_TOKEN_AGE`, ``nonce`` is the one the state carries, ``sub`` is present;
   - the nonce is used now for the first time: recorded as spent
     (:class:`~server.models.LtiLogin`, kept past the state's expiry) in one
     ``INSERT ... ON CONFLICT DO NOTHING`` on its unique column, so a replayed launch, or two
     requests racing with one state, cannot both pass. Only a token the LMS signed gets this
     far, so only the LMS's own launches are ever stored;
   - the LTI version is 1.3.0, the message type is a resource link or a deep-linking request,
     and the deployment id is registered for the platform.

   Nothing is written before the token's signature verifies, so no transaction is open while
   the LMS's key set is fetched.

Every value taken from the token is type-checked and capped before it is used or stored, and
must be storable text (``server.text_guard``); an identifier holding a control character (ESC,
a newline, a bidi override) is refused, display text (names, email, course title) has them
taken out.
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress
import json
import logging
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode, urlsplit

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from joserfc import jwt
from joserfc.errors import BadSignatureError, ExpiredTokenError, JoseError, MissingClaimError
from joserfc.jwk import OctKey, RSAKey
from joserfc.jws import extract_compact
from joserfc.jwt import JWTClaimsRegistry
from publicsuffixlist import PublicSuffixList
from sqlalchemy import delete
from sqlalchemy.orm import Session

from server.db import insert_unless_taken
from server.lti import claims as c
from server.lti.errors import LaunchRefused, PlatformNotFound
from server.lti.http import quoted_url, url_problem
from server.lti.platforms import JWKS_MAX_AGE, find_platform, has_deployment, platform_key, rotated_key
from server.models import LtiDeepLink, LtiLogin, LtiPlatform, LtiTicket, utcnow
from server.models.lti import MAX_URL_CHARS
from server.text_guard import display_text, is_printable_text, is_storable_text

log = logging.getLogger(__name__)

LOGIN_SECONDS = 600
#: A signed state is a few hundred characters; anything longer is not one of ours.
MAX_STATE_CHARS = 1024
STATE_ALGORITHM = "HS256"
_STATE_HKDF_INFO = b"ppo-grader/lti-state/v1"
#: A launch token issued longer ago than this is refused even if its ``exp`` is later.
MAX_TOKEN_AGE = timedelta(hours=1)
#: Clock difference tolerated between the LMS and this server.
LEEWAY_SECONDS = 60
MAX_TOKEN_CHARS = 64 * 1024
MAX_HINT_CHARS = 2000
STATE_COOKIE_PREFIX = "ppo_lti_state_"


def _digest(state: str) -> str:
    return hashlib.sha256(state.encode("utf-8", "replace")).hexdigest()


def state_cookie_name(state: str) -> str:
    """The cookie that binds ``state`` to the browser that began the login (one per login, so
    two launches in two tabs do not overwrite each other; named by a digest of the state, as
    every signed state begins with the same header)."""
    return STATE_COOKIE_PREFIX + _digest(state)[:16]


def _state_key(secret: bytes) -> OctKey:
    """The key that signs states: derived from SECRET_KEY for this use alone (HKDF), so a
    state is no MAC of anything else the tool signs with that secret."""
    return OctKey.import_key(
        HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_STATE_HKDF_INFO).derive(secret)
    )


@dataclass(frozen=True)
class SignedLogin:
    """What a verified state says: the platform the login began with, its nonce, its expiry."""

    platform_id: int
    nonce: str
    expires_at: datetime


@dataclass(frozen=True)
class LoginStart:
    """Where to send the browser, and the state to bind to it."""

    redirect_url: str
    state: str


def begin_login(
    session: Session, secret: bytes, params: dict[str, str], launch_url: str, now: datetime | None = None
) -> LoginStart:
    """Step 1: a platform asks to log a user in. ``launch_url`` is this tool's ``/lti/launch``
    (the ``redirect_uri`` the platform must have registered). Reads only: nothing is stored."""
    now = now or utcnow()
    issuer = params.get("iss", "")
    hint = params.get("login_hint", "")
    target = params.get("target_link_uri", "")
    if not issuer or not hint or not target:
        raise LaunchRefused(
            "Incomplete login request",
            "The LMS must send iss, login_hint and target_link_uri to start a launch. Launch again from the LMS.",
        )
    if any(
        len(params.get(k, "")) > MAX_HINT_CHARS for k in ("iss", "login_hint", "lti_message_hint", "target_link_uri")
    ):
        raise LaunchRefused("Login request too large", "A login parameter is longer than 2000 characters.")
    if urlsplit(target).netloc != urlsplit(launch_url).netloc:
        raise LaunchRefused(
            "Launch for another site",
            "The LMS asked to launch a page of another site (target_link_uri); check the tool's URLs in the LMS.",
        )
    try:
        platform = find_platform(session, issuer, params.get("client_id") or None)
    except PlatformNotFound as exc:
        raise LaunchRefused(
            "Unknown LMS", exc.detail + " An administrator registers it: ppo-grader lti add-platform.", 400
        ) from None
    deployment = params.get("lti_deployment_id")
    if deployment and not has_deployment(session, platform, deployment):
        raise _unregistered_deployment(platform, deployment)
    nonce = secrets.token_urlsafe(32)
    issued = int(now.timestamp())
    state = jwt.encode(
        {"alg": STATE_ALGORITHM},
        {"pid": platform.id, "nonce": nonce, "iat": issued, "exp": issued + LOGIN_SECONDS},
        _state_key(secret),
        algorithms=[STATE_ALGORITHM],
    )
    query = {
        "scope": "openid",
        "response_type": "id_token",
        "response_mode": "form_post",
        "prompt": "none",
        "client_id": platform.client_id,
        "redirect_uri": launch_url,
        "login_hint": hint,
        "state": state,
        "nonce": nonce,
    }
    if params.get("lti_message_hint"):
        query["lti_message_hint"] = params["lti_message_hint"]
    separator = "&" if "?" in platform.auth_login_url else "?"
    return LoginStart(platform.auth_login_url + separator + urlencode(query), state)


def read_state(state: str, secret: bytes, now: datetime) -> SignedLogin:
    """The login a state stands for, if this tool signed it and it has not expired."""
    try:
        token = jwt.decode(state, _state_key(secret), algorithms=[STATE_ALGORITHM])
    except (JoseError, ValueError, UnicodeError, RecursionError):
        raise LaunchRefused(
            "Unknown login", "This launch's state was not issued by this tool. Launch again from the LMS.", 400
        ) from None
    body = token.claims
    platform_id, nonce, expires = body.get("pid"), body.get("nonce"), body.get("exp")
    if (
        not isinstance(platform_id, int)
        or not isinstance(nonce, str)
        or not 0 < len(nonce) <= 64
        or not isinstance(expires, int)
    ):
        raise LaunchRefused("Unknown login", "This launch's state is not one this tool issues.", 400)
    if expires < now.timestamp():
        raise LaunchRefused("Login expired", "The login took more than ten minutes. Launch again from the LMS.", 403)
    return SignedLogin(platform_id, nonce, datetime.fromtimestamp(expires, tz=UTC))


def _spend_nonce(session: Session, state: str, login: SignedLogin, now: datetime) -> None:
    """Record the login's nonce as used (refused if it was): one statement on unique columns,
    so two launches racing with it cannot both pass. Kept a day past the state's expiry (a
    launch is refused on its state's expiry long before); what is older is deleted here, on
    this path that only the LMS's signed launches reach."""
    stale = now - timedelta(days=1)  # what expired a day ago is of no use, even to an audit
    for model in (LtiLogin, LtiTicket, LtiDeepLink):
        session.execute(delete(model).where(model.expires_at < stale))
    spent = insert_unless_taken(
        session,
        LtiLogin,
        {
            "state": _digest(state),
            "nonce": login.nonce,
            "platform_id": login.platform_id,
            "created_at": now,
            "expires_at": login.expires_at,
            "used_at": now,
        },
    )
    if spent is None:
        raise LaunchRefused(
            "Launch already used",
            "This launch was already used (a replayed or resubmitted launch). Launch again from the LMS.",
            403,
        )


def _unregistered_deployment(platform: LtiPlatform, deployment: str) -> LaunchRefused:
    return LaunchRefused(
        "Deployment not registered",
        f"{platform.name} launched from deployment {deployment[:100]!r}, which is not registered here. "
        "An administrator adds it: ppo-grader lti add-deployment.",
        403,
    )


@dataclass(frozen=True)
class Context:
    """The LMS course a launch comes from."""

    id: str
    title: str
    label: str


@dataclass(frozen=True)
class AgsEndpoint:
    """Where the course's line items live, and what the platform lets the tool do there."""

    lineitems: str | None
    lineitem: str | None
    scopes: tuple[str, ...]


@dataclass(frozen=True)
class DeepLinking:
    """A deep-linking request's settings: where the answer goes and what it may hold."""

    return_url: str
    data: str | None
    accept_multiple: bool
    accept_types: tuple[str, ...]


@dataclass(frozen=True)
class Launch:
    """A validated launch: who, from where, into what."""

    platform: LtiPlatform
    message_type: str
    deployment_id: str
    sub: str
    name: str
    email: str | None
    username: str | None
    roles: tuple[str, ...]
    context: Context | None
    resource_link_id: str | None
    custom: dict[str, str] = field(default_factory=dict)
    memberships_url: str | None = None
    ags: AgsEndpoint | None = None
    deep_linking: DeepLinking | None = None
    claims: dict[str, Any] = field(default_factory=dict, repr=False)


def validate_launch(
    session: Session,
    secret: bytes,
    id_token: str,
    state: str,
    now: datetime | None = None,
    jwks_max_age: timedelta = JWKS_MAX_AGE,
) -> Launch:
    """Step 2: the whole validation (module docstring); once the token verifies, its nonce is
    spent whatever the outcome. The caller commits (also after a refusal, so a spent nonce
    stays spent); a key-set refresh's claim is committed on the way, before the signature is
    checked and before anything is written (``server.lti.platforms.platform_key``). A cached key
    set older than ``jwks_max_age`` (the ``LTI_JWKS_MAX_AGE_SECONDS`` setting) is fetched again."""
    now = now or utcnow()
    if not id_token or not state or len(id_token) > MAX_TOKEN_CHARS or len(state) > MAX_STATE_CHARS:
        raise LaunchRefused("Incomplete launch", "The launch carries no id_token and state. Launch again from the LMS.")
    login = read_state(state, secret, now)
    platform = session.get(LtiPlatform, login.platform_id)
    if platform is None:
        raise LaunchRefused("Unknown LMS", "The LMS this login began with is no longer registered.", 403)
    token = _verified(session, platform, id_token, now, jwks_max_age)
    body = dict(token.claims)
    _check_claims(body, platform, login.nonce, now)
    _spend_nonce(session, state, login, now)
    deployment = _string(body.get(c.DEPLOYMENT_ID), "deployment id", required=True)
    if not has_deployment(session, platform, deployment):
        raise _unregistered_deployment(platform, deployment)
    return _launch(platform, deployment, body)


class NotJsonNumber(ValueError):
    """A JSON text holds ``NaN``, ``Infinity`` or ``-Infinity``: Python's ``json`` reads them,
    JSON (RFC 8259) has no such number."""


class StrictJSON(json.JSONDecoder):
    """The decoder of a launch's claims: JSON as RFC 8259 has it, no ``NaN``/``Infinity``, so
    what the tool gives back of the claims (the deep-linking ``data``) is JSON too."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["parse_constant"] = _refuse_constant
        super().__init__(**kwargs)


def _refuse_constant(constant: str) -> Any:
    raise NotJsonNumber(f"{constant} is not a JSON number")


def _signed_by(id_token: str, key: RSAKey) -> jwt.Token | None:
    """The token's claims if ``key`` signed it (None: another key did, or nobody); its other
    faults are ``LaunchRefused``."""
    try:
        return jwt.decode(id_token, key, algorithms=["RS256"], decoder_cls=StrictJSON)
    except BadSignatureError:
        return None
    except (JoseError, ValueError, RecursionError, UnicodeError) as exc:  # RecursionError: JSON nested too deep
        if isinstance(exc, NotJsonNumber) or isinstance(exc.__cause__, NotJsonNumber):  # joserfc wraps it
            raise LaunchRefused(
                "Malformed launch", "The id_token's claims hold NaN or Infinity, which is not JSON (RFC 7519).", 400
            ) from None
        raise LaunchRefused("Malformed launch", "The id_token could not be read.", 400) from None


def _verified(session: Session, platform: LtiPlatform, id_token: str, now: datetime, max_age: timedelta) -> jwt.Token:
    try:
        header = extract_compact(id_token.encode()).protected
    except (JoseError, ValueError, UnicodeError, RecursionError):
        raise LaunchRefused("Malformed launch", "The id_token is not a signed JWT.", 400) from None
    if header.get("alg") != "RS256":
        raise LaunchRefused("Wrong signature algorithm", "LTI 1.3 launches are signed with RS256.", 401)
    kid = header.get("kid")
    if not isinstance(kid, str) or not kid or len(kid) > 200:
        raise LaunchRefused("Unknown signing key", "The id_token does not name its key (kid).", 401)
    keys = platform_key(session, platform, kid, now, max_age)  # several under one kid: a rotation's overlap
    token = next((t for key in keys if (t := _signed_by(id_token, key)) is not None), None)
    if token is None:  # the LMS may have rotated its key under the same kid: one refresh, rate-limited
        token = rotated_key(session, platform, kid, keys, lambda fresh: _signed_by(id_token, fresh), now)
    if token is None:
        raise LaunchRefused(
            "Signature does not verify",
            f"The launch is not signed by {platform.name}'s key {kid[:80]!r} (forged or altered).",
            401,
        )
    return token


_CLAIM_PROBLEMS = {
    "iss": ("Wrong issuer", "The launch names another issuer than the LMS its login began with."),
    "aud": ("Wrong audience", "The launch was issued for another tool (its aud is not this tool's client id)."),
    "azp": ("Wrong audience", "The launch was issued for another tool (its azp is not this tool's client id)."),
    "exp": ("Launch expired", "The launch token has expired. Launch again from the LMS."),
    "iat": ("Launch not valid now", "The launch token's issue time is in the future or too long ago."),
    "nonce": ("Launch already used", "The launch's nonce is not the one this login issued (a replayed launch)."),
    "sub": ("No user", "The launch does not say who the user is (sub); anonymous launches are not supported."),
}


def _check_claims(body: dict[str, Any], platform: LtiPlatform, nonce: str, now: datetime) -> None:
    registry = JWTClaimsRegistry(
        now=int(now.timestamp()),
        leeway=LEEWAY_SECONDS,
        iss={"essential": True, "value": platform.issuer},
        aud={"essential": True, "value": platform.client_id},
        exp={"essential": True},
        iat={"essential": True},
        nonce={"essential": True, "value": nonce},
        sub={"essential": True},
    )
    try:
        registry.validate(body)
    except ExpiredTokenError:
        raise _claim_refused("exp") from None
    except (MissingClaimError, JoseError) as exc:
        raise _claim_refused(getattr(exc, "claim", "") or "") from None
    audiences = body["aud"] if isinstance(body["aud"], list) else [body["aud"]]
    if ("azp" in body or len(audiences) > 1) and body.get("azp") != platform.client_id:
        raise _claim_refused("azp")
    if not isinstance(body.get("iat"), int | float) or now.timestamp() - body["iat"] > MAX_TOKEN_AGE.total_seconds():
        raise _claim_refused("iat")
    if body.get(c.VERSION) != c.LTI_VERSION:
        raise LaunchRefused("Unsupported LTI version", "Only LTI 1.3.0 launches are accepted.")
    if body.get(c.MESSAGE_TYPE) not in c.MESSAGE_TYPES:
        raise LaunchRefused(
            "Unsupported message", "Only resource-link launches and deep-linking requests are accepted here."
        )


def _claim_refused(claim: str) -> LaunchRefused:
    title, text = _CLAIM_PROBLEMS.get(claim, ("Invalid launch", f"The launch's {claim or 'claims'} did not validate."))
    return LaunchRefused(title, text, 403 if claim == "nonce" else 401)  # a wrong nonce is a replay


def _storable(value: Any, what: str, *, required: bool = False, longest: int = 255) -> str:
    """A text claim: a string of at most ``longest`` characters that every database stores,
    else the launch is refused; "" for a missing optional one."""
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value) or len(value) > longest:
        raise LaunchRefused("Invalid launch", f"The launch's {what} must be a string of at most {longest} characters.")
    if not is_storable_text(value):  # a lone surrogate ("\ud800" is valid JSON) or a NUL
        raise LaunchRefused("Invalid launch", f"The launch's {what} is not valid text (a lone surrogate or NUL).")
    return value


def _string(value: Any, what: str, *, required: bool = False, longest: int = 255) -> str:
    """An identifier claim (a user, context, deployment or link id; a URL): storable and
    printable, else the launch is refused (cleaned, it would name something else)."""
    text = _storable(value, what, required=required, longest=longest)
    if not is_printable_text(text):  # ESC, a newline, a bidi override ... (server.text_guard.CONTROL)
        raise LaunchRefused("Invalid launch", f"The launch's {what} holds a control character.")
    return text


def _display(value: Any, what: str, keep: int) -> str:
    """A display claim (a name, an email, a course title; what people read and an LMS's users
    choose): storable, its control characters taken out (``server.text_guard.display_text``),
    cut to ``keep``."""
    return display_text(_storable(value, what, longest=2000), keep) or ""


def _opaque(value: Any) -> str | None:
    """The deep-linking ``data`` (any JSON value the platform wants back), as JSON; capped."""
    if value is None:
        return None
    try:
        text = json.dumps(value, allow_nan=False)  # ASCII: a lone surrogate travels escaped
        signed = json.dumps(value, ensure_ascii=False)  # as joserfc writes it when it signs it back
    except (ValueError, RecursionError):
        raise LaunchRefused(
            "Unreadable deep-linking data",
            "The deep-linking request's data is not JSON (it holds NaN or Infinity, or is nested too deep).",
        ) from None
    if not is_storable_text(signed):  # a lone surrogate ("\ud83d" is valid JSON): no UTF-8 to sign back
        raise LaunchRefused(
            "Unreadable deep-linking data",
            "The deep-linking request's data holds text that is not valid Unicode (a lone surrogate, as where "
            "an LMS cut an emoji in half), which ppo-grader cannot give back to the LMS. Fix the item's title "
            "in the LMS, then add ppo-grader again.",
        )
    if len(text) > 2000:
        raise LaunchRefused("Invalid launch", "The deep-linking request's data is longer than 2000 characters.")
    return text


def _service_url(value: Any, what: str, platform: LtiPlatform) -> str | None:
    """A service URL a launch names (the roster, the line items), if the tool can call it.
    Not text: the launch is refused, as for every text claim. Text but not a URL the tool calls
    (not https, say): left out and logged; the launch goes on (a learner is not locked out for
    a service the LMS misconfigured), the course keeps what an earlier launch named, and the
    service's first use without one says the LMS gave none it can call (an LMS failure)."""
    text = _storable(value, what, longest=MAX_URL_CHARS)
    if not text:
        return None
    problem = url_problem(text)
    if problem is not None:
        log.warning(
            "A launch from %s named a %s that %s (left out): %s", platform.name, what, problem, quoted_url(text)
        )
        return None
    return text


@functools.cache
def _suffixes() -> PublicSuffixList:
    """The Public Suffix List as the installed ``publicsuffixlist`` ships it (ICANN and private
    sections; read once, never fetched)."""
    return PublicSuffixList()


def registrable_site(host: str) -> str:
    """A host's site for :func:`return_url_on_site`: its registrable domain by the Public Suffix List
    (``school.instructure.com`` -> ``instructure.com``, ``lms.school.co.uk`` -> ``school.co.uk``);
    an address, a public suffix itself or a single label: the host itself."""
    host = host.lower().rstrip(".")
    try:
        ipaddress.ip_address(host.strip("[]"))
        return host
    except ValueError:
        pass
    return _suffixes().privatesuffix(host) or host


def return_url_on_site(url: str, platform: LtiPlatform) -> str:
    """The deep-linking return URL if it is an https URL (http where the platform's own URLs are
    on loopback) of the platform's site: the host of one of its registered URLs, or a name of the
    same registrable domain (:func:`registrable_site`: Canvas answers on the school's
    ``*.instructure.com``, its issuer is ``canvas.instructure.com``; a platform at
    ``lms.school.co.uk`` may answer on ``dl.school.co.uk``, never on another ``*.co.uk``). The
    browser posts the signed answer there, and its origin goes into the answer page's
    ``form-action``, so nothing else is accepted."""
    if url_problem(url) is not None:
        raise LaunchRefused("Invalid launch", "The deep-linking return URL is not an https URL.")
    host = (urlsplit(url).hostname or "").lower().rstrip(".")
    registered = {
        (urlsplit(u).hostname or "").lower().rstrip(".")
        for u in (platform.issuer, platform.auth_login_url, platform.auth_token_url, platform.jwks_url)
    } - {""}
    if host not in registered and registrable_site(host) not in {registrable_site(h) for h in registered}:
        raise LaunchRefused(
            "Invalid launch",
            f"The deep-linking return URL is not on {platform.name}'s site ({', '.join(sorted(registered))[:200]}).",
        )
    return url


#: Most content types a deep-linking request's ``accept_types`` may name, and each one's longest text.
MAX_ACCEPT_TYPES, MAX_ACCEPT_TYPE_CHARS = 20, 200


def _accept_types(value: Any) -> tuple[str, ...]:
    """A deep-linking request's ``accept_types``: an array of strings (Deep Linking 2.0 §4.4.1);
    a bare string is the one type it names, absent (or null) names none; anything else, or an
    array holding something other than short printable strings, is refused."""
    if value is None:
        return ()
    types = [value] if isinstance(value, str) else value
    if (
        not isinstance(types, list)
        or len(types) > MAX_ACCEPT_TYPES
        or not all(isinstance(t, str) and 0 < len(t) <= MAX_ACCEPT_TYPE_CHARS and is_printable_text(t) for t in types)
    ):
        raise LaunchRefused(
            "Invalid launch",
            f"The deep-linking request's accept_types must be a list of at most {MAX_ACCEPT_TYPES} content types "
            '(short texts such as "ltiResourceLink").',
        )
    return tuple(types)


def _accept_multiple(value: Any) -> bool:
    """A deep-linking request's ``accept_multiple``: a JSON boolean (Deep Linking 2.0 §4.4.1),
    or the text ``"true"``/``"false"``, read as that boolean; absent (or null) is true, as
    before; anything else is refused (never read as true because it is not empty)."""
    if value is None:
        return True
    if isinstance(value, bool):
        return value
    if value in ("true", "false"):
        return value == "true"
    raise LaunchRefused(
        "Invalid launch", "The deep-linking request's accept_multiple must be true or false (a JSON boolean)."
    )


def _launch(platform: LtiPlatform, deployment: str, body: dict[str, Any]) -> Launch:
    message = str(body[c.MESSAGE_TYPE])
    roles = body.get(c.ROLES, [])
    if not isinstance(roles, list):
        raise LaunchRefused("Invalid launch", "The launch's roles claim must be a list.")
    if any(isinstance(r, str) and not is_printable_text(r) for r in roles[: c.MAX_ROLES]):
        raise LaunchRefused(
            "Invalid launch",
            "The launch's roles are not printable text (a lone surrogate, a NUL or a control character).",
        )
    context = body.get(c.CONTEXT)
    place = None
    if isinstance(context, dict) and context.get("id"):
        place = Context(
            id=_string(context.get("id"), "context id", required=True),
            title=_display(context.get("title"), "context title", 200),
            label=_display(context.get("label"), "context label", 200),
        )
    link = body.get(c.RESOURCE_LINK)
    link_id = _string(link.get("id"), "resource link id") if isinstance(link, dict) else ""
    if message == c.RESOURCE_LINK_REQUEST and not link_id:
        raise LaunchRefused("Invalid launch", "A resource-link launch must name its resource link (id).")
    custom_claim = body.get(c.CUSTOM)
    custom = (
        {
            str(k)[:64]: v[:200]
            for k, v in list(custom_claim.items())[:50]
            if isinstance(v, str) and is_printable_text(str(k)[:64] + v[:200])
        }
        if isinstance(custom_claim, dict)
        else {}
    )
    nrps = body.get(c.NRPS)
    memberships = (
        _service_url(nrps.get("context_memberships_url"), "roster URL", platform) if isinstance(nrps, dict) else None
    )
    ags_claim = body.get(c.AGS)
    ags = None
    if isinstance(ags_claim, dict):
        scopes = ags_claim.get("scope", [])
        ags = AgsEndpoint(
            lineitems=_service_url(ags_claim.get("lineitems"), "line items URL", platform),
            lineitem=_service_url(ags_claim.get("lineitem"), "line item URL", platform),
            scopes=tuple(s for s in scopes[:20] if isinstance(s, str) and len(s) < 200 and is_printable_text(s))
            if isinstance(scopes, list)
            else (),
        )
    deep = None
    if message == c.DEEP_LINKING_REQUEST:
        settings = body.get(c.DEEP_LINKING_SETTINGS)
        if not isinstance(settings, dict):
            raise LaunchRefused("Invalid launch", "A deep-linking request must carry its settings.")
        accepted = _accept_types(settings.get("accept_types"))
        if accepted and c.RESOURCE_LINK_TYPE not in accepted:  # Deep Linking 2.0 §4.4.1
            raise LaunchRefused(
                "Content ppo-grader does not offer",
                "The LMS asked for content of a kind ppo-grader does not make here ("
                + ", ".join(t[:40] for t in accepted[:5])
                + "); ppo-grader adds exercises as LTI links. Add it where the LMS offers external tool links "
                "(an assignment or a module item).",
            )
        deep = DeepLinking(
            return_url=return_url_on_site(
                _string(settings.get("deep_link_return_url"), "deep-linking return URL", required=True, longest=2000),
                platform,
            ),
            data=_opaque(settings.get("data")),
            accept_multiple=_accept_multiple(settings.get("accept_multiple")),
            accept_types=accepted,
        )
    return Launch(
        platform=platform,
        message_type=message,
        deployment_id=deployment,
        sub=_string(body.get("sub"), "user id (sub)", required=True),
        name=_display(body.get("name"), "name", 128),
        email=_display(body.get("email"), "email", 255) or None,
        username=_display(body.get("preferred_username"), "username", 64) or None,
        roles=tuple(r for r in roles[: c.MAX_ROLES] if isinstance(r, str) and len(r) <= c.MAX_ROLE_CHARS),
        context=place,
        resource_link_id=link_id or None,
        custom=custom,
        memberships_url=memberships,
        ags=ags,
        deep_linking=deep,
        claims=body,
    )
