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

from rich.console import Console
from rich.markup import escape

from server.text_guard import CONTROL

out = Console(emoji=False)
err = Console(stderr=True, emoji=False)


def _escaped(found: re.Match[str]) -> str:
    return ascii(found.group())[1:-1]  # "\x1b" -> the four characters \x1b


def plain(value: object) -> str:
    """``value`` as text for a Rich line or table cell, shown as itself: its control
    characters written as escapes (``\\x1b``, ``\\u202e``), its markup escaped. Call it once
    per stored value (escaped twice, a ``[`` would show its backslash)."""
    return escape(CONTROL.sub(_escaped, str(value)))
