"""What kind of output the terminal gets, decided without importing Rich."""

from __future__ import annotations

import os
import sys
from typing import IO


def plain_output(stream: IO[str] | None = None) -> bool:
    """Whether to print plain text: no colour, no escape sequences, no box-drawing.

    True when ``NO_COLOR`` is set (https://no-color.org), ``TERM`` is ``dumb``, or the stream
    is not a terminal (a pipe, a file).
    """
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return True
    stream = sys.stdout if stream is None else stream
    try:
        return not stream.isatty()
    except (AttributeError, ValueError):
        return True
