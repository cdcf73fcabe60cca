"""The server's clock, injectable: ``create_app(clock=...)`` lets tests set the time instead
of sleeping or depending on the wall clock. Release, due and close rules read it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from server.models.base import utcnow

#: Returns the current time, timezone-aware UTC.
Clock = Callable[[], datetime]

system_clock: Clock = utcnow
