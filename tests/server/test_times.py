"""Every time a person reads is written by one function, in the course's zone, saying which."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from server.times import local_time

ROOT = Path(__file__).resolve().parents[2]
WINTER = datetime(2026, 12, 11, 16, 0, tzinfo=UTC)


def test_a_moment_is_written_in_the_zone_with_its_name() -> None:
    assert local_time(WINTER, "Europe/Paris") == "2026-12-11 17:00:00 CET"
    assert local_time(WINTER, "America/New_York", seconds=False) == "2026-12-11 11:00 EST"
    assert local_time(WINTER, "UTC") == "2026-12-11 16:00:00 UTC"
    assert local_time(WINTER.replace(tzinfo=None), "UTC") == "2026-12-11 16:00:00 UTC"  # naive: UTC
    assert local_time(WINTER, "Mars/Olympus") == "2026-12-11 16:00:00 UTC"  # an unknown zone says UTC


def test_no_other_server_module_formats_a_time_for_people() -> None:
    """A ``%H:%M`` anywhere else would be a second way to write a time (and a UTC one, usually)."""
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in (ROOT / "server").rglob("*.py")
        if path.name != "times.py" and "migrations" not in path.parts
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"%H|%M", line)
    ]
    assert found == []
