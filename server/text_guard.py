"""Refuse text that no database may see: a NUL byte (PostgreSQL text cannot hold it, so the
query fails and the caller got a 500) in a request's path or query string, for every route.

Stored grade reports are escaped instead (``server.grading.sanitize``); the source and user
fields are refused by their own validation. This guard covers the filters and path names
(``GET /submissions?user=%00``, ``POST /users/%00/tokens/revoke``) in one place, so that a
new route cannot forget it.

Text another system sends (an LMS's launch claims and roster, ``server.lti``) is JSON, where
``"\\ud800"`` and ``"\\u0000"`` are valid: :func:`is_storable_text` and :func:`storable_text`
(with a cap) are the one test every such value passes before it is stored or sent on.
"""

from __future__ import annotations

import re

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_MESSAGE = "The request's path or query contains a NUL byte (%00), which no name or filter can hold."


class RefuseNulInUrl:
    """ASGI middleware: 422 ``InvalidText`` for a NUL anywhere in the path or query string."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and _has_nul(scope):
            response = JSONResponse({"error": "InvalidText", "detail": _MESSAGE}, status_code=422)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _has_nul(scope: Scope) -> bool:
    # ``path`` is already percent-decoded; the query string is raw bytes ("%00" or "\0").
    query: bytes = scope.get("query_string", b"")
    return "\x00" in scope.get("path", "") or b"\x00" in query or b"%00" in query


def is_storable_text(text: str) -> bool:
    """False for text that PostgreSQL or SQLite's driver refuses: a NUL or a lone surrogate."""
    return _UNSTORABLE.search(text) is None


def storable_text(value: object, longest: int, *, cut: bool = False) -> str | None:
    """``value`` if it is a string of at most ``longest`` characters that every database can
    store (:func:`is_storable_text`), else None. ``cut``: a longer string is cut to ``longest``
    first (display text); without it, refused (an identifier cut short would name someone else)."""
    if not isinstance(value, str):
        return None
    if cut:
        value = value[:longest]
    if len(value) > longest or not is_storable_text(value):
        return None
    return value
