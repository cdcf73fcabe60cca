"""Submission limits per learner: a rate limit and a cap on waiting submissions.

- ``RATE_LIMIT`` ("30/minute"): at most N submissions per learner in any sliding window.
  The window lives in this process's memory (a deque of times per learner), which is right
  for the embedded mode (one API process). With several API processes each would allow N;
  a shared store (the database or Redis) would be needed there.
- ``MAX_QUEUED_PER_USER``: at most this many of a learner's submissions queued or running.
  Read from the database, so it holds across processes. A cheap first count refuses a
  full queue before the body is read; the binding count is made again inside the inserting
  transaction, after ``users.service.lock_learner`` has serialised that learner's
  submissions (without it, N concurrent POSTs all counted the same waiting rows and were all
  accepted).

Both answer 429 with ``Retry-After``. Instructors and admins are not limited. A retry that
replays an ``Idempotency-Key`` already used is not a new submission and is never limited.
The API applies them through ``server.deps.SubmissionLimits``; this module takes no HTTP.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.config import Settings
from server.errors import RateLimited, TooManyQueued
from server.models import Role, Status, Submission, User

_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}


def parse_rate(text: str) -> tuple[int, float]:
    """``"30/minute"`` -> (30, 60.0)."""
    count, unit = (part.strip() for part in text.split("/", 1))
    return int(count), float(_UNITS[unit])


class SlidingWindow:
    """At most ``limit`` events per key in any ``window`` seconds (thread-safe, in memory)."""

    def __init__(self, limit: int, window: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.window = window
        self.clock = clock
        self._events: dict[int, deque[float]] = {}
        self._lock = threading.Lock()

    def hit(self, key: int) -> float | None:
        """Record an event and return None, or refuse it and return seconds to wait."""
        now = self.clock()
        with self._lock:
            events = self._events.setdefault(key, deque())
            while events and events[0] <= now - self.window:
                events.popleft()
            if len(events) >= self.limit:
                return events[0] + self.window - now
            events.append(now)
            return None


def check_submission_limits(
    user: User, session: Session, settings: Settings, window: SlidingWindow, idempotency_key: str | None = None
) -> None:
    """Raise ``TooManyQueued`` or ``RateLimited`` (429) for a learner's new submission over a
    limit: the API's dependency (``server.deps.SubmissionLimits``), and the dashboard's upload."""
    if not Role(user.role).submissions_limited:
        return
    if idempotency_key is not None and session.scalar(
        select(Submission.id).where(Submission.user_id == user.id, Submission.idempotency_key == idempotency_key)
    ):
        return  # a replay: answered from the stored row, not a new submission
    refuse_if_queue_full(session, user, settings.MAX_QUEUED_PER_USER, retry_after=math.ceil(settings.WALL_SECONDS))
    wait = window.hit(user.id)
    if wait is not None:
        raise RateLimited(
            f"Too many submissions: the limit is {settings.RATE_LIMIT}. Try again in {math.ceil(wait)} s.",
            retry_after=math.ceil(wait),
        )


def refuse_if_queue_full(session: Session, user: User, max_queued: int, *, retry_after: int) -> None:
    """Raise ``TooManyQueued`` (429) when a learner already has ``max_queued`` submissions
    queued or running. Binding only after ``users.service.lock_learner`` in the same transaction."""
    if not Role(user.role).submissions_limited:
        return
    waiting = (
        session.scalar(
            select(func.count())
            .select_from(Submission)
            .where(Submission.user_id == user.id, Submission.status.in_([Status.QUEUED.value, Status.RUNNING.value]))
        )
        or 0
    )
    if waiting >= max_queued:
        raise TooManyQueued(
            f"You have {waiting} submissions waiting to be graded (the limit is {max_queued}); wait for one to finish.",
            retry_after=retry_after,
        )
