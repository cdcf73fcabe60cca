"""Long polling: ``GET /submissions/{id}?wait=S`` answers as soon as the verdict is stored.

In-process workers (the embedded default) announce each stored verdict through
:class:`VerdictAnnouncer`, which wakes the requests waiting for that id at once. Workers in
other processes (procrastinate) cannot reach it, so a waiting request also re-reads its row
every :data:`POLL_SECONDS`: one primary-key lookup, on the server, instead of a client round
trip per poll.
"""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict

#: How often a waiting request re-reads its row when no announcement comes (remote workers).
POLL_SECONDS = 0.05
#: The longest wait a request may ask for.
MAX_WAIT_SECONDS = 30.0


class VerdictAnnouncer:
    """Wakes requests waiting for a submission's verdict. Thread-safe: workers announce from
    their own threads, requests wait on the app's event loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[int, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = defaultdict(set)

    def announce(self, submission_id: int) -> None:
        """A verdict for ``submission_id`` is committed: wake whoever waits for it."""
        with self._lock:
            waiters = list(self._waiting.pop(submission_id, ()))
        for loop, event in waiters:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # that loop has closed: nobody is waiting on it any more
                pass

    async def wait(self, submission_id: int, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for an announcement; True when one came."""
        entry = (asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            self._waiting[submission_id].add(entry)
        try:
            await asyncio.wait_for(entry[1].wait(), timeout)
            return True
        except TimeoutError:
            return False
        finally:
            with self._lock:
                waiters = self._waiting.get(submission_id)
                if waiters is not None:
                    waiters.discard(entry)
                    if not waiters:
                        del self._waiting[submission_id]

    def waiting(self) -> int:
        """How many requests wait now (for tests and metrics)."""
        with self._lock:
            return sum(len(w) for w in self._waiting.values())
