"""The queue between the API and the workers. It carries submission ids only.

Two backends implement ``SubmissionQueue``:

* ``InProcessQueue`` (``QUEUE=inprocess``, the embedded default): ids handed to this
  process's worker threads after the commit; a crash loses nothing because rows stay
  ``queued``/``running`` and are re-queued at the next start.
* ``ProcrastinateQueue`` (``QUEUE=procrastinate``, PostgreSQL; see
  ``server/grading/procrastinate_backend.py``): the job row is inserted in the SAME
  transaction that stores the submission, so a crash between the two cannot lose one.
"""

from __future__ import annotations

import queue
from typing import TYPE_CHECKING, Protocol

from sqlalchemy import func, select

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from server.models import Submission


class SubmissionQueue(Protocol):
    """Anything the submissions service can hand a new submission to."""

    def defer(self, session: Session, submission: Submission) -> None:
        """Called inside the transaction that inserts the row (after flush, before commit)."""

    def enqueue(self, submission_id: int) -> None:
        """Called after the commit: schedule grading of a committed ``queued`` row."""

    def depth(self, session: Session) -> dict[str, int]:
        """Jobs waiting, per queue name (for /metrics)."""


class InProcessQueue:
    """A FIFO of ids shared by the worker threads of this process.

    Losing its contents (a crash) loses nothing: rows stay ``queued``/``running`` in the
    database and are re-queued at the next start.
    """

    def __init__(self) -> None:
        # None is the stop sentinel, one per worker.
        self._items: queue.Queue[int | None] = queue.Queue()

    def defer(self, session: Session, submission: Submission) -> None:
        """Nothing to write in the transaction: the row itself is the durable record."""

    def enqueue(self, submission_id: int) -> None:
        """Add an id (must be an int: only JSON-serialisable ids cross the queue)."""
        self._items.put(int(submission_id))

    def depth(self, session: Session) -> dict[str, int]:
        """Queued rows (the database, not this FIFO, is the truth)."""
        from server.models import Status, Submission

        count = session.scalar(select(func.count()).select_from(Submission).where(Submission.status == Status.QUEUED))
        return {"inprocess": int(count or 0)}

    def get(self) -> int | None:
        """Block until an id (or a stop sentinel, ``None``) is available."""
        return self._items.get()

    def wake_all(self, count: int) -> None:
        """Put ``count`` stop sentinels so that blocked workers return."""
        for _ in range(count):
            self._items.put(None)

    def __len__(self) -> int:
        return self._items.qsize()
