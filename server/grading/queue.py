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

import threading
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal, NamedTuple, Protocol

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


class Job(NamedTuple):
    """One id on the in-process queue: a live ``submission`` or a ``regrade`` result."""

    kind: Literal["submission", "regrade"]
    id: int


class InProcessQueue:
    """Two FIFOs of ids shared by the worker threads of this process: live submissions, and
    regrade results below them. A worker takes a regrade job only when no submission waits,
    and at most ``regrade_slots`` workers grade regrades at once (with two workers or more,
    one is always free for live submissions): a learner who submits during a regrade is not
    held behind it.

    Losing its contents (a crash) loses nothing: rows stay ``queued``/``running`` in the
    database and are re-queued at the next start.
    """

    def __init__(self, regrade_slots: int = 1) -> None:
        self._live: deque[int] = deque()
        self._regrades: deque[int] = deque()
        self._regrade_slots = max(1, regrade_slots)
        self._regrading = 0  # regrade jobs handed out and not yet finished
        self._stops = 0  # stop sentinels owed, one per worker
        self._ready = threading.Condition()

    def defer(self, session: Session, submission: Submission) -> None:
        """Nothing to write in the transaction: the row itself is the durable record."""

    def enqueue(self, submission_id: int) -> None:
        """Add an id (must be an int: only JSON-serialisable ids cross the queue)."""
        with self._ready:
            self._live.append(int(submission_id))
            self._ready.notify()

    def enqueue_regrades(self, result_ids: Iterable[int]) -> None:
        """Add regrade result ids, behind every live submission."""
        with self._ready:
            ids = [int(i) for i in result_ids]
            self._regrades.extend(ids)
            self._ready.notify(len(ids))

    def regrades_waiting(self) -> int:
        """Regrade ids handed over and not yet taken by a worker."""
        with self._ready:
            return len(self._regrades)

    def depth(self, session: Session) -> dict[str, int]:
        """Queued rows (the database, not this FIFO, is the truth)."""
        from server.models import Status, Submission

        count = session.scalar(select(func.count()).select_from(Submission).where(Submission.status == Status.QUEUED))
        return {"inprocess": int(count or 0)}

    def get(self) -> Job | None:
        """Block until a job (a live submission first) or a stop sentinel (``None``) is available."""
        with self._ready:
            while not (self._stops or self._live or self._regrade_allowed()):
                self._ready.wait()
            if self._stops:
                self._stops -= 1
                return None
            if self._live:
                return Job("submission", self._live.popleft())
            self._regrading += 1
            return Job("regrade", self._regrades.popleft())

    def _regrade_allowed(self) -> bool:
        return bool(self._regrades) and self._regrading < self._regrade_slots

    def finished(self, job: Job) -> None:
        """A worker is done with ``job`` (frees its regrade slot)."""
        if job.kind == "regrade":
            with self._ready:
                self._regrading -= 1
                self._ready.notify()

    def wake_all(self, count: int) -> None:
        """Put ``count`` stop sentinels so that blocked workers return."""
        with self._ready:
            self._stops += count
            self._ready.notify_all()

    def __len__(self) -> int:
        with self._ready:
            return len(self._live) + len(self._regrades)
