"""The queue between the API and the workers. It carries submission ids only.

Only the in-process queue exists for now; a procrastinate-backed one (a later issue) will
implement the same ``SubmissionQueue`` protocol.
"""

from __future__ import annotations

import queue
from typing import Protocol


class SubmissionQueue(Protocol):
    """Anything the submissions service can hand a committed submission id to."""

    def enqueue(self, submission_id: int) -> None:
        """Schedule grading of a committed ``queued`` row."""


class InProcessQueue:
    """A FIFO of ids shared by the worker threads of this process.

    Losing its contents (a crash) loses nothing: rows stay ``queued``/``running`` in the
    database and are re-queued at the next start.
    """

    def __init__(self) -> None:
        # None is the stop sentinel, one per worker.
        self._items: queue.Queue[int | None] = queue.Queue()

    def enqueue(self, submission_id: int) -> None:
        """Add an id (must be an int: only JSON-serialisable ids cross the queue)."""
        self._items.put(int(submission_id))

    def get(self) -> int | None:
        """Block until an id (or a stop sentinel, ``None``) is available."""
        return self._items.get()

    def wake_all(self, count: int) -> None:
        """Put ``count`` stop sentinels so that blocked workers return."""
        for _ in range(count):
            self._items.put(None)

    def __len__(self) -> int:
        return self._items.qsize()
