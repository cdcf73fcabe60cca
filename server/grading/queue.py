"""The queue between the API and the workers. It carries submission ids only.

Two backends implement ``SubmissionQueue``:

* ``InProcessQueue`` (``QUEUE=inprocess``, the embedded default): ids handed to this
  process's worker threads after the commit; a crash loses nothing because rows stay
  ``queued``/``running`` and are re-queued at the next start.

Both are fair between learners: one learner's many jobs never hold another learner's behind
them for more than the jobs already running. The in-process queue takes, among the learners
who have jobs waiting, the one with the fewest running, then the one served longest ago;
procrastinate ranks each learner's waiting jobs (``procrastinate_backend.live_priority``).
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

from server.models import RegradeSet, Status, Submission

if TYPE_CHECKING:
    from sqlalchemy.orm import Session


class SubmissionQueue(Protocol):
    """Anything the submissions service hands a new submission to, and a regrade its results."""

    def defer(self, session: Session, submission: Submission) -> None:
        """Called inside the transaction that inserts the row (after flush, before commit)."""

    def enqueue(self, submission_id: int, owner: int | None = None) -> None:
        """Called after the commit: schedule grading of a committed ``queued`` row
        (``owner``: the learner's user id, whose share of the workers is kept fair)."""

    def defer_regrade(self, session: Session, regrade: RegradeSet) -> None:
        """Called inside the transaction that stores a regrade set's queued results."""

    def enqueue_regrades(self, result_ids: Iterable[int]) -> None:
        """Called after that commit: schedule the results, behind every live submission."""

    def depth(self, session: Session) -> dict[str, int]:
        """Jobs waiting, per queue name (for /metrics)."""


class Job(NamedTuple):
    """One id on the in-process queue: a live ``submission`` (and its learner) or a ``regrade`` result."""

    kind: Literal["submission", "regrade"]
    id: int
    owner: int | None = None


class InProcessQueue:
    """The ids of this process's worker threads: live submissions, fair between learners, and
    regrade results below them. A worker takes a regrade job only when no submission waits,
    and at most ``regrade_slots`` workers grade regrades at once (with two workers or more,
    one is always free for live submissions): a learner who submits during a regrade is not
    held behind it.

    Live submissions wait per learner, each learner's in order. A free worker takes the next
    job of the learner who has the fewest jobs running, and among those the one served
    longest ago (never: first): so a learner who keeps five slow jobs queued gets one turn in
    each round, and another learner's job waits at most for the jobs already running.

    Losing its contents (a crash) loses nothing: rows stay ``queued``/``running`` in the
    database and are re-queued at the next start.
    """

    def __init__(self, regrade_slots: int = 1) -> None:
        self._live: dict[int | None, deque[int]] = {}  # learner -> their waiting ids (never empty)
        self._running: dict[int | None, int] = {}  # learner -> their jobs handed out, not finished
        self._served: dict[int | None, int] = {}  # learner -> when they were last handed one
        self._handed = 0  # jobs handed out so far (the clock of ``_served``)
        self._waiting = 0
        self._regrades: deque[int] = deque()
        self._regrade_slots = max(1, regrade_slots)
        self._regrading = 0  # regrade jobs handed out and not yet finished
        self._stops = 0  # stop sentinels owed, one per worker
        self._ready = threading.Condition()

    def defer(self, session: Session, submission: Submission) -> None:
        """Nothing to write in the transaction: the row itself is the durable record."""

    def enqueue(self, submission_id: int, owner: int | None = None) -> None:
        """Add an id (must be an int: only JSON-serialisable ids cross the queue) of ``owner``'s."""
        with self._ready:
            self._live.setdefault(owner, deque()).append(int(submission_id))
            self._waiting += 1
            self._ready.notify()

    def defer_regrade(self, session: Session, regrade: RegradeSet) -> None:
        """Nothing to write in the transaction: the result rows are the durable record."""

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
        count = session.scalar(select(func.count()).select_from(Submission).where(Submission.status == Status.QUEUED))
        return {"inprocess": int(count or 0)}

    def get(self) -> Job | None:
        """Block until a job (a live submission first) or a stop sentinel (``None``) is available."""
        with self._ready:
            while not (self._stops or self._waiting or self._regrade_allowed()):
                self._ready.wait()
            if self._stops:
                self._stops -= 1
                return None
            if self._waiting:
                return self._next_live()
            self._regrading += 1
            return Job("regrade", self._regrades.popleft())

    def _next_live(self) -> Job:
        """The fair pick (see the class); linear in the learners waiting, a few dozen at most."""
        owner = min(self._live, key=lambda o: (self._running.get(o, 0), self._served.get(o, -1)))
        ids = self._live[owner]
        submission_id = ids.popleft()
        if not ids:
            del self._live[owner]
        self._waiting -= 1
        self._running[owner] = self._running.get(owner, 0) + 1
        self._served[owner] = self._handed
        self._handed += 1
        return Job("submission", submission_id, owner)

    def _regrade_allowed(self) -> bool:
        return bool(self._regrades) and self._regrading < self._regrade_slots

    def finished(self, job: Job) -> None:
        """A worker is done with ``job`` (frees its regrade slot, or its learner's share)."""
        with self._ready:
            if job.kind == "regrade":
                self._regrading -= 1
                self._ready.notify()
                return
            left = self._running.get(job.owner, 0) - 1
            if left > 0:
                self._running[job.owner] = left
            else:
                self._running.pop(job.owner, None)

    def wake_all(self, count: int) -> None:
        """Put ``count`` stop sentinels so that blocked workers return."""
        with self._ready:
            self._stops += count
            self._ready.notify_all()

    def __len__(self) -> int:
        with self._ready:
            return self._waiting + len(self._regrades)
