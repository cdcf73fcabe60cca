"""Stored text in the administrator's terminal: how ``ppo-grader`` prints it.

What the CLI prints comes from people and systems the administrator does not control: an
LMS's display names and course titles (which its users choose), learners' display names, a
pack's titles, review notes, the errors an LMS answers. Printed as it is, through Rich, it can
(a) be read as markup: ``[/x]Eve`` crashes the command, ``[link=...]`` makes a link; and (b)
reach the terminal: ESC starts a sequence that sets the window title, clears the screen or
forges a hyperlink, a bidirectional override reorders the line. Text an LMS sends has its
control characters taken out where it enters (``server.text_guard``); whatever is stored,
however it got there, is printed through :func:`plain` once: every control character written
as its escape (``\\x1b``), Rich markup escaped. The consoles (:data:`out`, :data:`err`) read no
emoji codes (``:warning:`` stays as written).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from rich.cells import cell_len
from rich.console import Console

from server.text_guard import CONTROL

out = Console(emoji=False)
err = Console(stderr=True, emoji=False)


#: What Rich reads as a tag (``rich.markup.RE_TAGS``), with the backslashes before it.
_TAG = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")


def _control(found: re.Match[str]) -> str:
    return ascii(found.group())[1:-1]  # "\x1b" -> the four characters \x1b


def _tag(found: re.Match[str]) -> str:
    backslashes, tag = found.groups()
    return f"{backslashes}{backslashes}\\{tag}"  # each backslash doubled, then one for the tag


def plain(value: object) -> str:
    """``value`` as text for a Rich line or table cell, shown as itself: its control
    characters written as escapes (``\\x1b``, ``\\u202e``), every tag escaped as
    ``rich.markup.escape`` does it (without its extra backslash at the very end, there for
    markup that follows: put none right after this text). Call it once per stored value
    (escaped twice, a ``[`` would show its backslash)."""
    return _TAG.sub(_tag, escaped(value))


def escaped(value: object) -> str:
    """``value`` as text printed without Rich's markup (:func:`columns`): its control characters
    written as escapes, nothing else changed (``[x]`` stays ``[x]``)."""
    return CONTROL.sub(_control, str(value))


def columns(headings: Sequence[str], rows: Iterable[Sequence[object]], title: str | None = None) -> str:
    """A long table as plain text: a title line, the headings, a rule, one line per row, each
    column as wide as its widest value and two spaces apart; every value :func:`escaped`, none
    wrapped or cut. For listings of thousands of rows (``scores list``), which Rich's tables
    measure and wrap cell by cell (a second and more for 2,000 rows); print the text with
    ``markup=False``."""
    cells = [[escaped(v) for v in row] for row in rows]
    # Terminal cells, not characters: a name in a wide script takes two per character.
    widths = [max([cell_len(h), *(cell_len(row[i]) for row in cells)]) for i, h in enumerate(headings)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v + " " * (w - cell_len(v)) for v, w in zip(values, widths, strict=True)).rstrip()

    lines = [line(headings), "  ".join("-" * w for w in widths), *(line(row) for row in cells)]
    return "\n".join(([escaped(title)] if title is not None else []) + lines)
