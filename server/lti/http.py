"""The one way the tool calls an LMS: JWKS, token, NRPS and AGS requests.

- Only ``https`` URLs, except on loopback hosts (a platform on the same machine, in
  development and in the tests): a key set or a token fetched over plain HTTP from elsewhere
  could be swapped on the way. One rule (:func:`url_problem`), two verdicts: a URL an
  administrator enters (a registration) that breaks it is ``InvalidRegistration``
  (:func:`checked_url`); one an LMS names (a launch's service claims, a paging link, a line
  item's id) is ``LmsUnreachable`` (:func:`lms_url`), the LMS failing, recorded and retried
  like an LMS that does not answer, never an error of the caller's request.
- Every host is resolved here (``getaddrinfo``) and every address it resolves to is sorted
  by :func:`address_kind`. Unspecified (``0.0.0.0``, ``::``), link-local (169.254/16, the
  cloud metadata service), multicast, reserved and IPv4-mapped/6to4/Teredo addresses are
  always refused; loopback and private ones only where the caller allows them
  (``server.lti.services``: a platform registered on this machine, or on a private network,
  may name services there; a public platform may not). The request then goes to the checked
  address itself (the host name kept for TLS and ``Host``), so DNS cannot answer one address
  to the check and another to the connection.
- Every answer is read up to :data:`MAX_RESPONSE_BYTES` and must be JSON where JSON is
  expected; a connection timeout, a status outside 2xx, a body too large, nested too deep or
  not JSON becomes one ``LmsUnreachable`` whose message names the host and what went wrong
  (never the body).
- Redirects are not followed (a service URL answers itself, or the call fails).
"""

from __future__ import annotations

import ipaddress
import json
import socket
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from server.lti.errors import InvalidRegistration, LmsUnreachable
from server.models.lti import MAX_URL_CHARS  # the longest URL a column holds

#: Largest answer read from an LMS (a page of a big roster is a few hundred KiB).
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
TIMEOUT = httpx.Timeout(15.0, connect=5.0)
_LOOPBACK_NAMES = {"localhost"}
#: Most addresses of one host looked at (each is checked; the first is used).
MAX_ADDRESSES = 16

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class AddressKind(StrEnum):
    """What an address is, for deciding whether the tool may send a request there."""

    PUBLIC = "public"
    PRIVATE = "private"
    LOOPBACK = "loopback"
    REFUSED = "refused"


def address_kind(address: IpAddress) -> AddressKind:
    """Public, private (RFC 1918, ULA, CGNAT ...), loopback, or refused whatever the platform."""
    if isinstance(address, ipaddress.IPv6Address) and (
        address.ipv4_mapped is not None or address.sixtofour is not None or address.teredo is not None
    ):
        return AddressKind.REFUSED  # an IPv4 address in disguise: checked as IPv6, reached as IPv4
    if address.is_unspecified:
        return AddressKind.REFUSED
    if address.is_loopback:  # before "reserved": ::1 lies in the reserved ::/8
        return AddressKind.LOOPBACK
    if address.is_link_local or address.is_multicast or address.is_reserved:
        return AddressKind.REFUSED
    if address.is_private or not address.is_global:
        return AddressKind.PRIVATE
    return AddressKind.PUBLIC


def resolve(host: str, what: str) -> list[IpAddress]:
    """Every address ``host`` resolves to (a literal address: itself); ``LmsUnreachable`` if none."""
    bare = host.strip("[]")
    try:
        return [ipaddress.ip_address(bare)]
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(bare, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise LmsUnreachable(f"{what}: the host {host[:100]} could not be resolved.") from None
    addresses: list[IpAddress] = []
    for _family, _type, _proto, _name, sockaddr in found[:MAX_ADDRESSES]:
        try:
            address = ipaddress.ip_address(str(sockaddr[0]).split("%")[0])
        except ValueError:
            continue
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise LmsUnreachable(f"{what}: the host {host[:100]} could not be resolved.")
    return addresses


def host_kinds(host: str) -> set[AddressKind]:
    """The kinds of the addresses ``host`` resolves to now (empty when it does not resolve)."""
    try:
        return {address_kind(a) for a in resolve(host, "host")}
    except LmsUnreachable:
        return set()


def is_loopback(host: str) -> bool:
    """Whether ``host`` is written as this machine (``localhost``, a literal 127.0.0.0/8 or
    ``::1`` address): the only hosts plain http is accepted for."""
    if host.lower() in _LOOPBACK_NAMES or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def url_problem(url: object) -> str | None:
    """What is wrong with ``url`` as a service URL (None: an absolute https URL, or http on a
    loopback host): a phrase that follows "the URL" in a sentence."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL_CHARS or not url.isascii() or not url.isprintable():
        return f"is not a URL of at most {MAX_URL_CHARS} printable ASCII characters"
    if " " in url:
        return "is not a URL (it holds a space)"
    try:
        parts = urlsplit(url)
        hostname, _port = parts.hostname, parts.port
    except ValueError:
        return "is not an absolute https:// URL"
    if parts.scheme not in ("https", "http") or not hostname:
        return "is not an absolute https:// URL"
    if parts.scheme == "http" and not is_loopback(hostname):
        return "must use https:// (plain http is allowed for localhost only)"
    return None


def shown_url(url: object) -> str:
    """``url`` as a message quotes it: ASCII, capped, quoted (a lone surrogate or a control
    character from an LMS's answer is escaped, never stored or printed as such)."""
    return ascii(url[:200]) if isinstance(url, str) else type(url).__name__


def checked_url(url: object, what: str) -> str:
    """``url`` if it is an absolute https URL (http on a loopback host); else ``InvalidRegistration``.
    For the URLs an administrator enters (a registration); what an LMS names is :func:`lms_url`'s."""
    problem = url_problem(url)
    if problem is not None:
        raise InvalidRegistration(f"The {what} {problem}; got {shown_url(url)}.")
    assert isinstance(url, str)
    return url


def lms_url(url: object, what: str) -> str:
    """``url`` if it is an absolute https URL (http on a loopback host); else ``LmsUnreachable``.
    For the URLs an LMS names (a launch's service claims, a paging link, a line item's id): one
    that cannot be called is the LMS failing, handled (recorded, shown, retried) like one that
    does not answer."""
    problem = url_problem(url)
    if problem is not None:
        raise LmsUnreachable(
            f"{what}: the LMS named the URL {shown_url(url)}, which {problem}; check the tool's services in the LMS."
        )
    assert isinstance(url, str)
    return url


@dataclass(frozen=True)
class Answer:
    """An LMS's answer: status, the JSON body (None when empty) and the ``Link`` header."""

    status: int
    body: Any
    link: str


_LOCAL = frozenset({AddressKind.PUBLIC, AddressKind.PRIVATE, AddressKind.LOOPBACK})


@dataclass(frozen=True)
class Pinned:
    """A URL's checked addresses: ``targets`` the URL with its host replaced by each (tried in
    order, the next only when one cannot be connected to), ``host_header`` and ``server_name``
    what the host name was (sent as ``Host`` and used for TLS: SNI and certificate check)."""

    targets: tuple[str, ...]
    host_header: str
    server_name: str


def pinned(url: str, what: str, allowed: frozenset[AddressKind]) -> Pinned:
    """``url``'s checked addresses: every address its host resolves to must be of an
    ``allowed`` kind (one that is not refuses the whole URL: DNS answers may rotate)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    addresses = resolve(host, what)
    for address in addresses:
        kind = address_kind(address)
        if kind not in allowed or kind is AddressKind.REFUSED:
            shown = "an address" if kind is AddressKind.REFUSED else f"a {kind.value} address"
            raise LmsUnreachable(
                f"{what}: {host[:100]} is {shown} ({address}) the tool does not send requests to; refused."
            )
    targets = []
    for address in addresses:
        literal = f"[{address}]" if isinstance(address, ipaddress.IPv6Address) else str(address)
        targets.append(urlunsplit(parts._replace(netloc=literal + (f":{parts.port}" if parts.port else ""))))
    return Pinned(tuple(targets), parts.netloc.rpartition("@")[2], host)


def call(
    method: str,
    url: str,
    what: str,
    *,
    headers: dict[str, str] | None = None,
    json_body: Any = None,
    form: dict[str, str] | None = None,
    params: dict[str, str] | None = None,
    accept_status: tuple[int, ...] = (),
    client: httpx.Client | None = None,
    allowed: frozenset[AddressKind] = _LOCAL,
) -> Answer:
    """One request to an LMS; ``what`` names it in errors ("the roster of ...").

    A 2xx (or a status in ``accept_status``) comes back as an ``Answer``; anything else raises
    ``LmsUnreachable``. ``allowed``: the kinds of address the URL's host may resolve to (the
    registered URLs an administrator entered: any but the always refused). A URL that is not
    https (loopback aside) is ``LmsUnreachable`` too: the registered ones were checked when
    entered, so one that fails here came from the LMS."""
    lms_url(url, what)
    place = pinned(url, what, allowed)
    host = place.server_name
    for value in (headers or {}).values():
        if not value.isascii() or not value.isprintable():
            raise LmsUnreachable(f"{what}: a header value for {host} is not printable ASCII (from the LMS's answers).")
    own = client is None
    session = client or httpx.Client(timeout=TIMEOUT, follow_redirects=False)
    extensions = {"sni_hostname": host} if urlsplit(url).scheme == "https" else {}
    try:
        for n, target in enumerate(place.targets):
            try:
                status, link, body = _exchange(
                    session,
                    method,
                    target,
                    what,
                    host,
                    headers={**(headers or {}), "Host": place.host_header},
                    json=json_body,
                    data=form,
                    params=params,
                    extensions=extensions,
                )
                break
            except httpx.ConnectError:
                if n == len(place.targets) - 1:
                    raise
    except (httpx.HTTPError, httpx.InvalidURL, ValueError, UnicodeError) as exc:
        raise LmsUnreachable(f"{what}: could not reach {host} ({type(exc).__name__}).") from None
    finally:
        if own:
            session.close()
    if not (200 <= status < 300) and status not in accept_status:
        raise LmsUnreachable(f"{what}: {host} answered HTTP {status}.", status=status)
    if not body.strip():
        return Answer(status, None, link)
    try:
        return Answer(status, json.loads(bytes(body)), link)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise LmsUnreachable(f"{what}: {host} answered something that is not JSON (or nested too deep).") from None


def _exchange(
    session: httpx.Client, method: str, target: str, what: str, host: str, **request: Any
) -> tuple[int, str, bytearray]:
    """One request to a checked address: (status, ``Link`` header, body read up to the cap)."""
    with session.stream(method, target, **request) as response:
        body = bytearray()
        for chunk in response.iter_bytes():
            body += chunk
            if len(body) > MAX_RESPONSE_BYTES:
                raise LmsUnreachable(f"{what}: {host} answered more than {MAX_RESPONSE_BYTES // 2**20} MiB.")
        return response.status_code, response.headers.get("link", ""), body


def next_page(link: str) -> str | None:
    """The ``rel="next"`` URL of a ``Link`` header (NRPS and AGS paging), if any."""
    for part in link.split(",")[:20]:
        target, _, params = part.partition(";")
        if 'rel="next"' in params.replace(" ", "") or "rel=next" in params.replace(" ", ""):
            return target.strip().strip("<>") or None
    return None
