"""Bound and clean every learner-influenced value of a grade report before a database sees it.

The judge caps what it produces, but storage does not rely on that: a check message that
formats a whole learner tensor was once 150 MB, and one NUL byte in the output made
PostgreSQL refuse the row (internal_error). So, at storage, whatever the judge sent:

- text (verdict message, check messages, mistake titles, stdout, stderr) is cut to a byte
  cap with a visible note (the one capper, :func:`sandbox.text.cap_bytes`), NUL becomes the visible escape ``\\x00`` (PostgreSQL text cannot
  hold NUL) and lone surrogates (which neither UTF-8 nor the drivers accept) become U+FFFD;
- check names fit their column, and so do check and mistake ids (or they are dropped: an id
  is never stored cut, since a cut id would count as another check or mistake); at most
  ``MAX_CHECKS`` checks are kept;
- ``timings`` keeps at most ``MAX_TIMINGS`` finite numbers under short clean keys;
- score, CPU seconds and peak memory are finite numbers in range, or None.

Work is proportional to the caps, never to the input: a 150 MB message is sliced before it
is copied or encoded.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from sandbox.text import cap_bytes

#: Each check message, mistake title and the verdict message: "about 4 KiB each".
MESSAGE_BYTES = 4 * 1024
#: Column width of ``check_results.name``.
CHECK_NAME_CHARS = 128
#: Width of ``check_results.check_id`` and ``mistake_id`` (``"<slug>/<id>"``).
ID_CHARS = 160
#: Checks kept per report (exercises have about ten).
MAX_CHECKS = 64
#: Entries kept in ``timings``, and the length of each key.
MAX_TIMINGS = 32
TIMING_KEY_CHARS = 64
#: Largest value a ``BIGINT`` column holds.
_BIGINT_MAX = 2**63 - 1

_SURROGATES = re.compile("[\ud800-\udfff]")


def clean_text(value: object, limit_bytes: int) -> str:
    """``value`` as storable text: at most ``limit_bytes`` UTF-8 bytes, a note saying how much
    was cut included, NUL shown as ``\\x00``, lone surrogates replaced by U+FFFD."""
    text = value if isinstance(value, str) else ("" if value is None else str(value))
    head = text[:limit_bytes]  # every character is at least one byte: nothing past this is kept
    cleaned = _SURROGATES.sub("\ufffd", head.replace("\x00", "\\x00"))
    return cap_bytes(cleaned, limit_bytes, total=len(text) if len(head) < len(text) else None)


def clean_id(value: object) -> str | None:
    """A check or mistake id fit to store and group by: printable text within ``ID_CHARS``
    characters, else None (stored as "no id": the row is then grouped by its sentence)."""
    if not isinstance(value, str) or not 0 < len(value) <= ID_CHARS or not value.isprintable():
        return None
    return None if _SURROGATES.search(value) else value


def clean_optional_text(value: object, limit_bytes: int) -> str | None:
    """Like ``clean_text``, keeping None as None."""
    return None if value is None else clean_text(value, limit_bytes)


def clean_float(value: object, *, minimum: float | None = None) -> float | None:
    """A finite float (at least ``minimum``), or None for anything else (NaN, inf, text)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    if not math.isfinite(number) or (minimum is not None and number < minimum):
        return None
    return number


def clean_bytes_count(value: object) -> int | None:
    """A non-negative integer that fits a BIGINT column, or None."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _BIGINT_MAX:
        return None
    return value


def clean_timings(reported: object, own: Mapping[str, float] | None = None) -> dict[str, float]:
    """The judge's ``reported`` timings as at most ``MAX_TIMINGS`` finite numbers under clean
    keys of at most ``TIMING_KEY_CHARS`` characters (anything else dropped), then the
    server's ``own`` measurements, which always fit and win on a clash."""
    own_clean = {_clean_key(k): v for k, v in (own or {}).items() if clean_float(v) is not None}
    timings: dict[str, float] = {}
    if isinstance(reported, Mapping):
        for count, (key, value) in enumerate(reported.items()):
            if count >= MAX_TIMINGS or len(timings) + len(own_clean) >= MAX_TIMINGS:
                break  # bounds the work on a huge dict, not only the result
            number = clean_float(value)
            if number is not None and isinstance(key, str):
                timings[_clean_key(key)] = number
    return {**timings, **own_clean}


def _clean_key(key: str) -> str:
    return _SURROGATES.sub("\ufffd", key[:TIMING_KEY_CHARS].replace("\x00", "\\x00"))[:TIMING_KEY_CHARS]
