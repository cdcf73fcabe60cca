"""The one text capper: every message, traceback and captured output that is kept is cut here.

``cap(text, limit)`` keeps at most ``limit`` characters, the note included; ``cap_bytes``
keeps at most ``limit`` UTF-8 bytes, the note included, never half a character. Both say how
much was cut in one format, :func:`cut_note`: ``[... 1234 characters cut]``. Work is bounded
by the limit, whatever the size of the input.

It lives at the bottom of the layering (``server`` -> ``exercises`` -> ``sandbox``) so that
the jail's harness, the judge and the server's storage all cut text the same way; ``client/``
stands apart and lays out what it is sent.
"""

from __future__ import annotations


def cut_note(count: int, unit: str = "characters") -> str:
    """The note that ends a cut text: ``" [... 1234 characters cut]"``."""
    return f" [... {count} {unit} cut]"


def cap(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, note included, saying how much was cut."""
    if len(text) <= limit:
        return text
    room = limit - len(cut_note(len(text)))  # the longest the note can be
    if room <= 0:
        return text[:limit]
    return text[:room] + cut_note(len(text) - room)


def cap_bytes(text: str, limit: int, *, total: int | None = None) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes, note included, never splitting a character.

    ``total`` is the length of the text ``text`` was taken from, when the caller kept only a
    prefix of it (the note counts from there).
    """
    total = len(text) if total is None else total
    if total == len(text) and len(text.encode("utf-8", "surrogatepass")) <= limit:
        return text
    note = cut_note(total)
    room = limit - len(note.encode())
    if room <= 0:
        return text.encode("utf-8", "surrogatepass")[:limit].decode("utf-8", "ignore")
    kept = text[:room].encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")
    return kept + cut_note(total - len(kept))
