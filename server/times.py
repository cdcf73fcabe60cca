"""How a moment is written for a person: one function, :func:`local_time`, for every page, every
message and every terminal table the server writes.

A time a person reads is in the course's time zone and says which: ``2026-12-11 17:00:00 CET``
(the zone's abbreviation; ``UTC`` for a course kept in UTC). Machine-readable times (the API's
JSON, the CSV exports, a ``<time datetime=...>`` attribute) stay ISO 8601 with their offset.
A zone the server does not know (a hand-edited row) falls back to UTC, which the text then says.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


def local_time(moment: datetime, zone: str, *, seconds: bool = True) -> str:
    """``moment`` as a person reads it in ``zone`` (an IANA name): ``2026-12-11 17:00:00 CET``,
    or to the minute (``seconds=False``): ``2026-12-11 17:00 CET``. A naive ``moment`` is UTC."""
    at = (moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)).astimezone(_zone(zone))
    return f"{at:%Y-%m-%d %H:%M:%S} {at.tzname()}" if seconds else f"{at:%Y-%m-%d %H:%M} {at.tzname()}"


def zoned_time(moment: datetime, zone: str) -> str:
    """:func:`local_time`, then the zone's name: ``2026-12-11 17:00:00 CET (Europe/Paris)``, as
    messages and terminal lines name a course's time."""
    return f"{local_time(moment, zone)} ({zone})"


def _zone(name: str) -> tzinfo:
    try:
        return ZoneInfo(name) if len(name) <= 64 else UTC
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return UTC


def input_value(moment: datetime | None, zone: str) -> str:
    """``moment`` as an HTML ``datetime-local`` input holds it: local to ``zone``, to the second,
    without the zone (the form says which); "" for no moment."""
    if moment is None:
        return ""
    at = (moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)).astimezone(_zone(zone))
    return f"{at:%Y-%m-%dT%H:%M:%S}"
