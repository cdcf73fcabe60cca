"""LTI Advantage service calls: an OAuth2 access token, then NRPS (roster) and AGS (line items,
scores, results).

The token is bought with a client assertion (IMS security framework §4.1): a JWT the tool
signs (``server.lti.keys``) with ``iss`` and ``sub`` its client id and ``aud`` the platform's
token URL. A client is given a session factory, never a caller's session: it signs each
assertion, and keeps each token request's outcome on the platform (``service_failed`` /
``service_worked``), in a short transaction of its own, so nobody holds a transaction (on
SQLite the database's one write lock; on PostgreSQL the platform's row) while the LMS
answers. One :class:`LmsClient` serves one job (a roster sync, a preview, an apply): it keeps
its tokens and its HTTP connection for that job only, never between jobs (no global state).
Paged answers (``Link: <...>; rel="next"``) are followed up to :data:`MAX_PAGES`,
:data:`MAX_PAGED_BYTES` and :data:`MAX_PAGED_SECONDS` in all (its token request included); a longer list, or a next link
back to a page already read, is ``LmsUnreachable`` (never a cut list
taken as whole: a roster cut short would mark everyone after the cut as dropped). Every URL an
answer names (a next page, a line item's ``id``) is checked (``server.lti.http.lms_url``)
before it is followed or handed back to be stored: one the tool cannot call is
``LmsUnreachable``, the LMS failing.
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from sqlalchemy.orm import Session

from server.db import SessionFactory, transaction
from server.lti import keys
from server.lti.errors import LmsUnreachable
from server.lti.http import (
    MAX_RESPONSE_BYTES,
    TIMEOUT,
    AddressKind,
    Answer,
    call,
    host_kinds,
    lms_client,
    lms_url,
    next_page,
)
from server.lti.platforms import TOKEN, service_failed, service_worked
from server.models import LtiPlatform, utcnow

MAX_PAGES = 100
MAX_ITEMS = 20_000
#: Most bytes one paged read (a roster, a column's results) takes in all, its pages together
#: (a course of 20,000 members is a few MiB): a page is asked for only while a whole answer
#: (``server.lti.http.MAX_RESPONSE_BYTES``) still fits in what is left.
MAX_PAGED_BYTES = 32 * 1024 * 1024
#: Most seconds one paged read takes in all (each exchange within its own deadline too).
MAX_PAGED_SECONDS = 60.0
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
MEMBERSHIPS = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
LINE_ITEMS = "application/vnd.ims.lis.v2.lineitemcontainer+json"
LINE_ITEM = "application/vnd.ims.lis.v2.lineitem+json"
SCORE = "application/vnd.ims.lis.v1.score+json"
RESULTS = "application/vnd.ims.lis.v2.resultcontainer+json"


def service_url(lineitem: str, suffix: str) -> str:
    """A line item's ``/scores`` or ``/results`` endpoint: its URL with ``suffix`` appended to
    the path, the query kept (AGS §3.4, §3.5)."""
    parts = urlsplit(lineitem)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + suffix))


#: From the strictest: the kind a platform's token host is taken to be is the first of these
#: among its addresses (:func:`service_address_kinds`).
_STRICTEST_FIRST = (AddressKind.REFUSED, AddressKind.PUBLIC, AddressKind.PRIVATE, AddressKind.LOOPBACK)


def service_address_kinds(kinds: set[AddressKind]) -> frozenset[AddressKind]:
    """Where a platform's service URLs may lead: public addresses, and the kind of network the
    administrator registered the platform on (``kinds``: its token URL's host's): a platform on this
    machine (development, the tests) may name loopback services, one on a private network
    private ones; a public platform neither. The host's kind is decided from *every* address
    it resolves to, by the strictest: a name whose DNS lists a public address and 127.0.0.1 is
    a public platform (its services on loopback refused), one that lists a private address
    and a loopback one a private platform; one that does not resolve, or lists an address
    never called, public. Unspecified, link-local, multicast and reserved addresses never,
    also written as an IPv6 address that embeds one (IPv4-mapped, NAT64, 6to4, Teredo:
    ``server.lti.http.address_kind`` sorts those as the IPv4 address they stand for)."""
    kind = next((k for k in _STRICTEST_FIRST if k in kinds), AddressKind.PUBLIC)
    if kind is AddressKind.REFUSED:
        kind = AddressKind.PUBLIC
    return frozenset({AddressKind.PUBLIC, kind})


class ColumnUnusable(LmsUnreachable):
    """The LMS lists the exercise's column (its resource id and tag) with an ``id`` the tool
    cannot call (not https, say): an LMS failure like any other, and proof that the column
    exists, so no second one is asked for (``server.lti.deeplink``)."""


class LmsClient:
    """Calls to one platform's services on behalf of the tool, for one job."""

    def __init__(self, sessions: SessionFactory, secret: bytes, platform: LtiPlatform) -> None:
        self._sessions = sessions
        self._secret = secret
        self.platform = platform
        self._tokens: dict[tuple[str, ...], str] = {}
        kinds = host_kinds(urlsplit(platform.auth_token_url).hostname or "")
        self._allowed = service_address_kinds(kinds)
        #: The token URL (an administrator's entry, like the key set's) may lead where its host
        #: led when this client was made: every kind among its addresses then (never one it
        #: rebinds to later, nor one never called: ``server.lti.http.pinned``).
        self._token_allowed = frozenset(kinds | {AddressKind.PUBLIC})
        self._http = lms_client(TIMEOUT)
        #: Requests sent (tokens included): what a job did, counted.
        self.requests = 0

    def __enter__(self) -> LmsClient:
        return self

    def __exit__(self, *_exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._http.close()

    def _call(self, method: str, url: str, what: str, *, registered: bool = False, **kwargs: Any) -> Answer:
        # A service URL comes from a launch's claims or an LMS's answer (paging links, line
        # item ids): every address it resolves to is checked, and the request goes there.
        # ``registered``: the token URL itself.
        self.requests += 1
        allowed = self._token_allowed if registered else self._allowed
        return call(method, url, what, client=self._http, allowed=allowed, **kwargs)

    def token(self, scopes: tuple[str, ...], seconds: float | None = None) -> str:
        """An access token for ``scopes`` (bought once per client; ``seconds``: a shorter
        deadline for the request, what is left of a paged read's budget)."""
        if scopes in self._tokens:
            return self._tokens[scopes]
        platform = self.platform
        claims = {"iss": platform.client_id, "sub": platform.client_id, "aud": platform.auth_token_url}
        with transaction(self._sessions) as session:  # a first key is made and committed here, before the LMS sees it
            assertion = keys.sign(session, self._secret, claims)
        try:
            answer = self._call(
                "POST",
                platform.auth_token_url,
                f"an access token from {platform.name}",
                registered=True,
                seconds=seconds,
                form={
                    "grant_type": "client_credentials",
                    "client_assertion_type": ASSERTION_TYPE,
                    "client_assertion": assertion,
                    "scope": " ".join(scopes),
                },
            )
            token = answer.body.get("access_token") if isinstance(answer.body, dict) else None
            if (
                not isinstance(token, str)
                or not token
                or len(token) > 8192
                or not token.isascii()
                or not token.isprintable()
            ):
                raise LmsUnreachable(
                    f"an access token from {platform.name}: the answer holds no usable access_token "
                    "(at most 8192 printable ASCII characters)."
                )
        except LmsUnreachable as exc:
            self._token_health(exc.detail)
            raise
        self._token_health(None)
        self._tokens[scopes] = token
        return token

    def _token_health(self, failure: str | None) -> None:
        """Keep a failed token request on the platform, or clear the one kept
        (``server.lti.platforms.service_failed``), in a short transaction of its own: committed
        before the client calls the LMS again."""
        with transaction(self._sessions) as session:
            self._note(session, failure)

    def _note(self, session: Session, failure: str | None) -> None:
        if failure is None:
            service_worked(session, self.platform.id, TOKEN)
        else:
            service_failed(session, self.platform.id, TOKEN, failure, utcnow())

    def _headers(
        self, scopes: tuple[str, ...], accept: str, content_type: str | None = None, seconds: float | None = None
    ) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self.token(scopes, seconds)}", "Accept": accept}
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    def _pages(
        self,
        url: str,
        what: str,
        scopes: tuple[str, ...],
        accept: str,
        key: str | None,
        params: dict[str, str] | None = None,
    ) -> list[dict[str, Any]]:
        """Every item of a paged container (``key`` its list; None: the body is the list), read
        within :data:`MAX_PAGED_BYTES` and :data:`MAX_PAGED_SECONDS` in all (past either, the
        whole read is ``LmsUnreachable``: nothing is taken from an incomplete list)."""
        items: list[dict[str, Any]] = []
        page: str | None = url
        seen: set[str] = set()
        read = 0
        end = time.monotonic() + MAX_PAGED_SECONDS
        for _ in range(MAX_PAGES):
            if page is None:
                break
            if page in seen:  # a next link back to a page already read: the roster would never end
                raise LmsUnreachable(f"{what}: the LMS's pages link back to a page already read (a loop).")
            seen.add(page)
            if read + MAX_RESPONSE_BYTES > MAX_PAGED_BYTES:
                raise LmsUnreachable(
                    f"{what}: the LMS's pages hold more than the {MAX_PAGED_BYTES // 2**20} MiB one read takes in all "
                    f"({read / 2**20:.0f} MiB read, and another page might not fit); nothing was taken from an "
                    "incomplete list."
                )
            left = end - time.monotonic()
            try:
                if left <= 0:
                    raise LmsUnreachable(what)
                headers = self._headers(scopes, accept, seconds=left)  # the token too, within the read's budget
                left = end - time.monotonic()
                if left <= 0:
                    raise LmsUnreachable(what)
                answer = self._call("GET", page, what, headers=headers, params=params, seconds=left)
            except LmsUnreachable:
                if time.monotonic() < end:
                    raise
                raise LmsUnreachable(
                    f"{what}: the LMS's pages were not read in full within {MAX_PAGED_SECONDS:g} s in all; "
                    "nothing was taken from an incomplete list."
                ) from None
            read += answer.size
            params = None  # the next link carries its own query
            found = answer.body.get(key) if key is not None and isinstance(answer.body, dict) else answer.body
            if not isinstance(found, list):
                raise LmsUnreachable(f"{what}: the answer is not a list of {key or 'items'}.")
            items.extend(item for item in found if isinstance(item, dict))
            if len(items) > MAX_ITEMS:
                raise LmsUnreachable(f"{what}: more than {MAX_ITEMS} entries.")
            page = next_page(answer.link)
            if page is not None:  # the LMS's word: checked as every URL it names, before it is followed
                lms_url(page, f"{what} (the next page)")
        if page is not None:  # cut here, the list would look complete and miss everyone after
            raise LmsUnreachable(f"{what}: more than {MAX_PAGES} pages; nothing was taken from an incomplete list.")
        return items

    def members(self, memberships_url: str, scopes: tuple[str, ...]) -> list[dict[str, Any]]:
        """NRPS: every member of the course (``user_id``, ``roles``, ``status``, names, email)."""
        return self._pages(memberships_url, f"the roster from {self.platform.name}", scopes, MEMBERSHIPS, "members")

    def line_items(
        self, lineitems_url: str, scopes: tuple[str, ...], *, resource_id: str, tag: str
    ) -> list[dict[str, Any]]:
        """AGS: the course's line items with this resource id and tag (filtered here too: a
        platform may ignore the query)."""
        found = self._columns(lineitems_url, scopes, {"resource_id": resource_id, "tag": tag})
        ours = [i for i in found if i.get("resourceId") == resource_id and i.get("tag") == tag]
        for item in ours:  # never skipped: the tool would then make a second column for the exercise
            try:
                lms_url(item.get("id"), f"the gradebook column {resource_id!r} on {self.platform.name}")
            except LmsUnreachable as exc:
                raise ColumnUnusable(exc.detail) from None
        return ours

    def tagged_line_items(self, lineitems_url: str, scopes: tuple[str, ...], *, tag: str) -> list[dict[str, Any]]:
        """AGS: every line item of the course with this tag, in one paged read (one
        :data:`MAX_PAGED_SECONDS` budget for all of them; filtered here too: a platform may
        ignore the query). Their ids are not checked here: the caller checks the ones it uses
        (``server.lti.lineitems.listed_columns``)."""
        return [i for i in self._columns(lineitems_url, scopes, {"tag": tag}) if i.get("tag") == tag]

    def _columns(self, lineitems_url: str, scopes: tuple[str, ...], params: dict[str, str]) -> list[dict[str, Any]]:
        """AGS: the course's line items the query ``params`` asks for, every page of them."""
        return self._pages(
            lineitems_url, f"the gradebook columns from {self.platform.name}", scopes, LINE_ITEMS, None, params=params
        )

    def create_line_item(self, lineitems_url: str, scopes: tuple[str, ...], item: dict[str, Any]) -> dict[str, Any]:
        """AGS: create a line item; returns it (with its ``id`` URL)."""
        answer = self._call(
            "POST",
            lineitems_url,
            f"a new gradebook column on {self.platform.name}",
            headers=self._headers(scopes, LINE_ITEM, LINE_ITEM),
            json_body=item,
        )
        if not isinstance(answer.body, dict) or "id" not in answer.body:
            raise LmsUnreachable(f"a new gradebook column on {self.platform.name}: the answer has no id.")
        lms_url(answer.body["id"], f"a new gradebook column on {self.platform.name}")
        return answer.body

    def post_score(self, lineitem_url: str, scopes: tuple[str, ...], score: dict[str, Any]) -> int:
        """AGS: send one score; returns the status (2xx; anything else raises)."""
        lms_url(
            lineitem_url, f"the gradebook column on {self.platform.name}"
        )  # remembered by an older version: checked here too
        answer = self._call(
            "POST",
            service_url(lineitem_url, "/scores"),
            f"a score to {self.platform.name}",
            headers=self._headers(scopes, "application/json", SCORE),
            json_body=score,
        )
        return answer.status

    def results(self, lineitem_url: str, scopes: tuple[str, ...]) -> list[dict[str, Any]]:
        """AGS: every result (``userId``, ``resultScore``, ``resultMaximum``) of a line item."""
        lms_url(lineitem_url, f"the gradebook column on {self.platform.name}")
        return self._pages(
            service_url(lineitem_url, "/results"), f"the gradebook from {self.platform.name}", scopes, RESULTS, None
        )
