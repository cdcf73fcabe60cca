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
  cloud metadata service), multicast and reserved addresses are always refused; an IPv6
  address that stands for an IPv4 one (IPv4-mapped ``::ffff:a.b.c.d``, NAT64
  ``64:ff9b::a.b.c.d``, 6to4, Teredo) is sorted as the IPv4 address it embeds, since that is
  where the request goes (``64:ff9b::a9fe:a9fe`` is the metadata service through a NAT64
  gateway), and a local-use NAT64 address (``64:ff9b:1::/48``, whose embedding depends on the
  network) is refused; loopback and private ones only where the caller allows them
  (``server.lti.services``: a platform registered on this machine, or on a private network,
  may name services there; a public platform may not). The request then goes to the checked
  address itself (the host name kept for TLS and ``Host``), so DNS cannot answer one address
  to the check and another to the connection.
- Every exchange (connecting, sending, the whole answer) has one deadline, the timeout's
  ``read`` seconds (:data:`TIMEOUT`, 15 s) from its start: httpx's own timeouts are per
  network operation, so an LMS that trickles its answer a byte at a time, each byte within the
  timeout, would hold the request (and the worker or page that waits on it) for as long as it
  liked. Every read and write of the connection waits at most what is left of the deadline
  (:class:`_DeadlineBackend`), headers included.
- Every answer is read up to :data:`MAX_RESPONSE_BYTES` and must be JSON where JSON is
  expected. The tool asks for no compression (``Accept-Encoding: identity``) and reads the raw
  bytes; an answer compressed anyway (gzip or deflate, at most :data:`MAX_CODINGS` layers, any
  other coding refused) is decompressed piece by piece, the cap on what it decompresses to, so
  a few KiB of gzip-of-gzip never become hundreds of MiB in memory (:class:`_Inflater`); a connection timeout, an answer not in whole by the deadline, a status outside
  2xx, a body too large, nested too deep or not JSON becomes one ``LmsUnreachable`` whose
  message names the host and what went wrong (never the body).
- Redirects are not followed (a service URL answers itself, or the call fails), and no proxy
  from the environment is used (it would resolve and connect on its own).
"""

from __future__ import annotations

import ipaddress
import json
import socket
import ssl
import time
import zlib
from collections.abc import Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpcore
import httpx

from server.lti.errors import InvalidRegistration, LmsUnreachable
from server.models.lti import MAX_URL_CHARS  # the longest URL a column holds

#: Largest answer read from an LMS (a page of a big roster is a few hundred KiB).
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
#: Per network operation (connect 5 s); ``read`` is also the deadline of a whole exchange.
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


#: NAT64's well-known prefix (RFC 6052): the last 32 bits are the IPv4 address reached.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
#: Local-use NAT64 (RFC 8215): a network's own prefix length places the IPv4 address anywhere.
_LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for, where it has one: IPv4-mapped, NAT64's
    well-known prefix, 6to4 (the site's router), Teredo (the client, de-obfuscated)."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None


def address_kind(address: IpAddress) -> AddressKind:
    """Public, private (RFC 1918, ULA, CGNAT ...), loopback, or refused whatever the platform.
    An IPv6 address that embeds an IPv4 one is the kind of that IPv4 address (it is where the
    request goes: checked as IPv6, it would be reached as IPv4)."""
    if isinstance(address, ipaddress.IPv6Address):
        if address in _LOCAL_NAT64:
            return AddressKind.REFUSED  # which IPv4 address it reaches depends on the network
        inner = embedded_ipv4(address)
        if inner is not None:
            return address_kind(inner)
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


def quoted_url(url: object) -> str:
    """``url`` as a message quotes it: ASCII, capped, quoted (a lone surrogate or a control
    character from an LMS's answer is escaped, never stored or printed as such)."""
    return ascii(url[:200]) if isinstance(url, str) else type(url).__name__


def checked_url(url: object, what: str) -> str:
    """``url`` if it is an absolute https URL (http on a loopback host); else ``InvalidRegistration``.
    For the URLs an administrator enters (a registration); what an LMS names is :func:`lms_url`'s."""
    problem = url_problem(url)
    if problem is not None:
        raise InvalidRegistration(f"The {what} {problem}; got {quoted_url(url)}.")
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
            f"{what}: the LMS named the URL {quoted_url(url)}, which {problem}; check the tool's services in the LMS."
        )
    assert isinstance(url, str)
    return url


#: When the exchange under way in this thread (or task) must be over (``time.monotonic()``).
_deadline: ContextVar[float | None] = ContextVar("lms_exchange_deadline", default=None)


def _left(timeout: float | None, late: type[httpcore.TimeoutException]) -> float | None:
    """``timeout`` cut to what is left of the exchange's deadline; ``late`` once it has passed."""
    end = _deadline.get()
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise late("the LMS exchange's deadline has passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read and write waits at most what is left of the deadline."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        inner = self._inner.start_tls(ssl_context, server_hostname, _left(timeout, httpcore.ConnectTimeout))
        return _DeadlineStream(inner)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's own network, every connection a :class:`_DeadlineStream`."""

    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        timeout = _left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_tcp(host, port, timeout, local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("the tool calls an LMS over TCP only")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _DeadlineTransport(httpx.HTTPTransport):
    """httpx's transport over :class:`_DeadlineBackend` (its pool rebuilt with that backend:
    httpx takes no backend of its own choosing)."""

    def __init__(self) -> None:
        # Not super().__init__(): it would build a pool (and load a TLS context) only to drop it.
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(),  # as httpx's own: certifi, or SSL_CERT_FILE
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            network_backend=_DeadlineBackend(),
        )


def lms_client(timeout: httpx.Timeout = TIMEOUT) -> httpx.Client:
    """An HTTP client for calls to an LMS (:func:`call`): no redirects, every exchange within
    ``timeout.read`` seconds, whole (:data:`TIMEOUT`), and no proxy from the environment (the
    request goes to the checked address itself, through this transport's deadline; the TLS
    context still reads ``SSL_CERT_FILE``)."""
    return httpx.Client(
        timeout=timeout,
        follow_redirects=False,
        transport=_DeadlineTransport(),
        trust_env=False,
        headers={"Accept-Encoding": "identity"},  # httpx would ask for gzip (and br, zstd where installed)
    )


@dataclass(frozen=True)
class Answer:
    """An LMS's answer: status, the JSON body (None when empty), the ``Link`` header and the
    body's size in bytes (what a paged read counts against its total: ``server.lti.services``)."""

    status: int
    body: Any
    link: str
    size: int = 0


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
    seconds: float | None = None,
) -> Answer:
    """One request to an LMS; ``what`` names it in errors ("the roster of ...").

    A 2xx (or a status in ``accept_status``) comes back as an ``Answer``; anything else raises
    ``LmsUnreachable``. ``allowed``: the kinds of address the URL's host may resolve to (the
    registered URLs an administrator entered: any but the always refused). A URL that is not
    https (loopback aside) is ``LmsUnreachable`` too: the registered ones were checked when
    entered, so one that fails here came from the LMS. ``seconds``: a shorter deadline for this
    exchange than the client's (what is left of a paged read's budget)."""
    lms_url(url, what)
    place = pinned(url, what, allowed)
    host = place.server_name
    for value in (headers or {}).values():
        if not value.isascii() or not value.isprintable():
            raise LmsUnreachable(f"{what}: a header value for {host} is not printable ASCII (from the LMS's answers).")
    own = client is None
    session = client or lms_client()
    extensions = {"sni_hostname": host} if urlsplit(url).scheme == "https" else {}
    longest = session.timeout.read or TIMEOUT.read or 15.0
    seconds = longest if seconds is None else max(0.0, min(seconds, longest))
    deadline = _deadline.set(time.monotonic() + seconds)
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
    except httpx.TimeoutException as exc:
        end = _deadline.get()
        if end is not None and time.monotonic() >= end:
            raise LmsUnreachable(
                f"{what}: {host} did not answer in full within {seconds:g} s (an LMS must answer each request "
                "whole within that time)."
            ) from None
        raise LmsUnreachable(f"{what}: could not reach {host} ({type(exc).__name__}).") from None
    except (httpx.HTTPError, httpx.InvalidURL, ValueError, UnicodeError) as exc:
        raise LmsUnreachable(f"{what}: could not reach {host} ({type(exc).__name__}).") from None
    finally:
        _deadline.reset(deadline)
        if own:
            session.close()
    if not (200 <= status < 300) and status not in accept_status:
        raise LmsUnreachable(f"{what}: {host} answered HTTP {status}.", status=status)
    if not body.strip():
        return Answer(status, None, link, len(body))
    try:
        return Answer(status, json.loads(bytes(body)), link, len(body))
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise LmsUnreachable(f"{what}: {host} answered something that is not JSON (or nested too deep).") from None


#: The content codings an LMS answer may come in (``Accept-Encoding: identity`` asks for none;
#: an LMS that compresses anyway is read, layer by layer), and the most layers undone.
_CODINGS = frozenset({"gzip", "x-gzip", "deflate"})
MAX_CODINGS = 2
#: zlib's window bits for "a gzip or a zlib stream, whichever its header says" (``deflate`` in
#: HTTP is the zlib format).
_GZIP_OR_ZLIB = 32 + zlib.MAX_WBITS


class _Inflater:
    """An answer's body decompressed as it arrives: each layer of its ``Content-Encoding``
    undone by a zlib stream told the most it may put out (``max_length``), so no layer ever
    makes more than :data:`MAX_RESPONSE_BYTES` (+1, to tell "over") however small what was sent;
    httpx's own decoders inflate each chunk whole, a few KiB of gzip-of-gzip into hundreds of
    MiB before a cap could look."""

    def __init__(self, encoding: str, what: str, host: str) -> None:
        self._what, self._host = what, host
        codings = [name.strip().lower() for name in encoding.split(",")[: MAX_CODINGS + 1]]
        codings = [name for name in codings if name and name != "identity"]
        if len(codings) > MAX_CODINGS or any(name not in _CODINGS for name in codings):
            raise LmsUnreachable(
                f"{what}: {host} answered in a content encoding the tool does not read ({quoted_url(encoding[:60])})."
            )
        self._layers = [zlib.decompressobj(_GZIP_OR_ZLIB) for _ in codings]
        self._made = [0] * len(codings)

    def feed(self, data: bytes) -> bytes:
        """What ``data`` (the next raw bytes) decompresses to; ``LmsUnreachable`` once a layer
        would make more than :data:`MAX_RESPONSE_BYTES`."""
        for n, layer in enumerate(self._layers):
            if not data:
                break
            try:
                data = layer.decompress(data, MAX_RESPONSE_BYTES - self._made[n] + 1)
            except zlib.error:
                raise self._broken() from None
            self._made[n] += len(data)
            if self._made[n] > MAX_RESPONSE_BYTES:
                raise LmsUnreachable(
                    f"{self._what}: {self._host} answered more than {MAX_RESPONSE_BYTES // 2**20} MiB (decompressed)."
                )
        return data

    def finish(self, sent: int) -> None:
        """``LmsUnreachable`` unless every layer's stream ended, nothing after its end (an
        empty body, ``sent`` 0, is empty whatever its headers say)."""
        for layer in self._layers if sent else ():
            if not layer.eof or layer.unused_data:
                raise self._broken()

    def _broken(self) -> LmsUnreachable:
        return LmsUnreachable(f"{self._what}: {self._host} answered a compressed body that could not be decompressed.")


def _exchange(
    session: httpx.Client, method: str, target: str, what: str, host: str, **request: Any
) -> tuple[int, str, bytearray]:
    """One request to a checked address: (status, ``Link`` header, body read up to the cap).
    The raw bytes are read (``iter_raw``: httpx decodes nothing) and decompressed here, the cap
    on what they decompress to (:class:`_Inflater`) as well as on what was sent."""
    request["headers"] = {**request.get("headers", {}), "Accept-Encoding": "identity"}
    with session.stream(method, target, **request) as response:
        inflater = _Inflater(response.headers.get("content-encoding", ""), what, host)
        body, sent = bytearray(), 0
        for chunk in response.iter_raw():
            sent += len(chunk)
            body += inflater.feed(chunk)
            if sent > MAX_RESPONSE_BYTES or len(body) > MAX_RESPONSE_BYTES:
                raise LmsUnreachable(f"{what}: {host} answered more than {MAX_RESPONSE_BYTES // 2**20} MiB.")
        inflater.finish(sent)
        return response.status_code, response.headers.get("link", ""), body


def next_page(link: str) -> str | None:
    """The ``rel="next"`` URL of a ``Link`` header (NRPS and AGS paging), if any."""
    for part in link.split(",")[:20]:
        target, _, params = part.partition(";")
        if 'rel="next"' in params.replace(" ", "") or "rel=next" in params.replace(" ", ""):
            return target.strip().strip("<>") or None
    return None
