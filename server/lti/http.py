"""The one way the tool calls an LMS: JWKS, token, NRPS and AGS requests.

- Only ``https`` URLs, except on loopback hosts (a platform on the same machine, in
  development and in the tests): a key set or a token fetched over plain HTTP from elsewhere
  could be swapped on the way.
- Every answer is read up to :data:`MAX_RESPONSE_BYTES` and must be JSON where JSON is
  expected; a connection timeout, a status outside 2xx, a body too large or not JSON becomes
  one ``LmsUnreachable`` whose message names the host and what went wrong (never the body).
- Redirects are not followed (a service URL answers itself, or the call fails).
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from server.lti.errors import InvalidRegistration, LmsUnreachable

#: Largest answer read from an LMS (a page of a big roster is a few hundred KiB).
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
TIMEOUT = httpx.Timeout(15.0, connect=5.0)
_LOOPBACK_NAMES = {"localhost"}


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host.lower() in _LOOPBACK_NAMES or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def checked_url(url: object, what: str) -> str:
    """``url`` if it is an absolute https URL (http on a loopback host); else ``InvalidRegistration``."""
    if (
        not isinstance(url, str)
        or not url
        or len(url) > 2000
        or not url.isascii()
        or not url.isprintable()
        or " " in url
    ):
        raise InvalidRegistration(f"The {what} must be a URL of at most 2000 printable ASCII characters.")
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise InvalidRegistration(f"The {what} must be an absolute https:// URL; got {url[:200]!r}.")
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        raise InvalidRegistration(
            f"The {what} must use https:// (plain http is allowed for localhost only); got {url[:200]!r}."
        )
    return url


@dataclass(frozen=True)
class Answer:
    """An LMS's answer: status, the JSON body (None when empty) and the ``Link`` header."""

    status: int
    body: Any
    link: str


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
) -> Answer:
    """One request to an LMS; ``what`` names it in errors ("the roster of ...").

    A 2xx (or a status in ``accept_status``) comes back as an ``Answer``; anything else raises
    ``LmsUnreachable``."""
    checked_url(url, what)
    host = urlsplit(url).hostname
    own = client is None
    session = client or httpx.Client(timeout=TIMEOUT, follow_redirects=False)
    try:
        with session.stream(method, url, headers=headers, json=json_body, data=form, params=params) as response:
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_RESPONSE_BYTES:
                    raise LmsUnreachable(f"{what}: {host} answered more than {MAX_RESPONSE_BYTES // 2**20} MiB.")
            status, link = response.status_code, response.headers.get("link", "")
    except httpx.HTTPError as exc:
        raise LmsUnreachable(f"{what}: could not reach {host} ({type(exc).__name__}).") from None
    finally:
        if own:
            session.close()
    if not (200 <= status < 300) and status not in accept_status:
        raise LmsUnreachable(f"{what}: {host} answered HTTP {status}.")
    if not body.strip():
        return Answer(status, None, link)
    try:
        return Answer(status, json.loads(bytes(body)), link)
    except (ValueError, UnicodeDecodeError):
        raise LmsUnreachable(f"{what}: {host} answered something that is not JSON.") from None


def next_page(link: str) -> str | None:
    """The ``rel="next"`` URL of a ``Link`` header (NRPS and AGS paging), if any."""
    for part in link.split(",")[:20]:
        target, _, params = part.partition(";")
        if 'rel="next"' in params.replace(" ", "") or "rel=next" in params.replace(" ", ""):
            return target.strip().strip("<>") or None
    return None
