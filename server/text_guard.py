"""Refuse text that no database may see: a NUL byte (PostgreSQL text cannot hold it, so the
query fails and the caller got a 500) in a request's path or query string, for every route.

Stored grade reports are escaped instead (``server.grading.sanitize``); the source and user
fields are refused by their own validation. This guard covers the filters and path names
(``GET /submissions?user=%00``, ``POST /users/%00/tokens/revoke``) in one place, so that a
new route cannot forget it.

Text another system sends (an LMS's launch claims and roster, ``server.lti``) is JSON, where
``"\\ud800"`` and ``"\\u0000"`` are valid: :func:`is_storable_text` and the length cap
are the one test every such value passes before it is stored or sent on.

It must also be printable (:data:`CONTROL`): an LMS's display names and course titles are
shown by the dashboard and printed by ``ppo-grader`` in an administrator's terminal, where ESC
starts an escape sequence (set the window title, clear the screen, forge a hyperlink) and a
bidirectional override reorders what the reader sees. So an identifier the LMS sends (a user
id, a context id, a role) holding one is refused, as an unstorable one is
(:func:`is_printable_text`, :func:`printable_text`); display text has them taken out
(:func:`display_text`). What the CLI prints of any stored text is escaped once more, whatever
wrote it (``server.terminal``).
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # types only: the CLI and the services import this module, and need no HTTP
    from starlette.types import ASGIApp, Receive, Scope, Send

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
#: What no text shown to a person may hold: the C0 and C1 controls and DEL (ESC, BEL, CR ...),
#: the bidirectional marks, embeddings, overrides and isolates, and the line and paragraph
#: separators. (Zero-width joiners stay: emoji sequences and several scripts need them.)
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
#: The controls that separate words (tab, newlines, the separators): a space in display text.
_SPACING = re.compile("[\t\n\v\f\r\x1c-\x1f\x85\u2028\u2029]")
_MESSAGE = "The request's path or query contains a NUL byte (%00), which no name or filter can hold."


class RefuseNulInUrl:
    """ASGI middleware: 422 ``InvalidText`` for a NUL anywhere in the path or query string."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and _has_nul(scope):
            from starlette.responses import JSONResponse

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


def is_blank(text: str) -> bool:
    """True when ``text`` shows nothing: only white space and format characters (Unicode
    category Cf: U+200B, U+2060, U+FEFF ...), which a reader cannot see, so a comment,
    answer or reason made of them says nothing."""
    return all(ch.isspace() or unicodedata.category(ch) == "Cf" for ch in text)


def is_printable_text(text: str) -> bool:
    """Storable (:func:`is_storable_text`) and free of every :data:`CONTROL` character."""
    return is_storable_text(text) and CONTROL.search(text) is None


def printable_text(value: object, longest: int) -> str | None:
    """``value`` if it is a string of at most ``longest`` characters that is storable and holds
    no control character (:func:`is_printable_text`), else None: the test of an identifier
    another system sends (cut or cleaned, it would name someone else)."""
    if not isinstance(value, str) or len(value) > longest or not is_printable_text(value):
        return None
    return value


def display_text(value: object, longest: int) -> str | None:
    """Display text another system sends, made printable: None unless a storable string;
    the controls that separate words become spaces, every other :data:`CONTROL` character is
    taken out, every run of white space becomes one space, and the result is cut to ``longest``."""
    if not isinstance(value, str) or not is_storable_text(value):
        return None
    return " ".join(CONTROL.sub("", _SPACING.sub(" ", value)).split())[:longest].rstrip()
