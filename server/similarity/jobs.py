"""Similarity runs in the background, on either queue. Never on a learner's critical path:
a submission never waits for one, and grading jobs go first.

- **In-process** (``QUEUE=inprocess``, SQLite): one ``SimilarityWorker`` thread in the API
  process, apart from the grading threads. It takes run ids enqueued after their commit;
  every ``poll_seconds`` it also requests the runs due dates call for (by the app's clock)
  and picks up runs queued by another process (``ppo-grader similarity --refresh`` on a
  second terminal). At start it re-queues what a crash left ``running``.
- **procrastinate** (``QUEUE=procrastinate``, PostgreSQL): the job row is written in the
  transaction that creates the run, on the ``cpu`` queue with a lower priority than any
  grading job; ``ppo-grader worker --queue cpu`` runs it, and a periodic task (every five
  minutes) requests the runs due dates call for.
Both call ``server.similarity.service.run_similarity``; nothing else differs.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from typing import TYPE_CHECKING

from sqlalchemy import select, text

from server.clock import Clock, system_clock
from server.db import SessionFactory, transaction
from server.models import RunStatus, SimilarityRun
from server.similarity.service import requeue_unfinished, run_similarity, sweep_due

if TYPE_CHECKING:
    import procrastinate
    from sqlalchemy.orm import Session

log = logging.getLogger(__name__)

TASK_NAME = "ppo_grader.similarity"
SWEEP_TASK_NAME = "ppo_grader.similarity_due"
#: Below grading jobs (priority 0): a worker takes every waiting submission first.
PRIORITY = -10

_DEFER_SQL = text(
    "SELECT procrastinate_defer_jobs_v1(ARRAY[ROW("
    "'cpu'::varchar, CAST(:task AS varchar), CAST(:priority AS integer), NULL::text, NULL::text, "
    "CAST(:args AS jsonb), NULL::timestamptz)::procrastinate_job_to_defer_v1])"
)


class SimilarityWorker:
    """One thread that computes runs for the in-process queue."""

    def __init__(self, sessions: SessionFactory, clock: Clock, poll_seconds: float = 30.0, processes: int = 1) -> None:
        self._sessions = sessions
        self._processes = processes
        self._clock = clock
        self._poll = poll_seconds
        self._ids: queue.Queue[int | None] = queue.Queue()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def defer(self, session: Session, run_id: int) -> None:
        """Nothing in the transaction: the queued row is the durable record."""

    def enqueue(self, run_id: int) -> None:
        """Hand a committed run to the thread."""
        self._ids.put(int(run_id))

    def start(self) -> None:
        """Re-queue unfinished runs, then start the thread (daemon: never blocks exit)."""
        with transaction(self._sessions) as session:
            ids = requeue_unfinished(session)
        for run_id in ids:
            self.enqueue(run_id)
        self._thread = threading.Thread(target=self._loop, name="similarity", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Finish the run in hand (a queued run is picked up at the next start)."""
        self._stopping.set()
        self._ids.put(None)
        if self._thread is not None:
            self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stopping.is_set():
            try:
                run_id = self._ids.get(timeout=self._poll)
            except queue.Empty:
                self._tick()
                continue
            if run_id is None:
                return
            try:
                run_similarity(self._sessions, run_id, processes=self._processes)
            except Exception:  # never let one run kill the thread
                log.exception("similarity run %s could not be processed", run_id)

    def _tick(self) -> None:
        """Due dates that passed, and runs another process queued."""
        try:
            with transaction(self._sessions) as session:
                sweep_due(session, self._clock())
                ids = _queued_ids(session)
            for run_id in ids:
                self.enqueue(run_id)
        except Exception:
            log.exception("similarity sweep failed; trying again later")


def _queued_ids(session: Session) -> list[int]:
    return list(
        session.scalars(
            select(SimilarityRun.id).where(SimilarityRun.status == RunStatus.QUEUED).order_by(SimilarityRun.id)
        )
    )


class ProcrastinateSimilarity:
    """Writes the run's job row in the caller's transaction (PostgreSQL)."""

    def defer(self, session: Session, run_id: int) -> None:
        """Insert the procrastinate job next to the run."""
        session.execute(
            _DEFER_SQL, {"task": TASK_NAME, "priority": PRIORITY, "args": json.dumps({"run_id": int(run_id)})}
        )

    def enqueue(self, run_id: int) -> None:
        """Nothing after the commit: the job was committed with the run."""


def register_tasks(app: procrastinate.App, sessions: SessionFactory, processes: int = 1) -> None:
    """The similarity job and the periodic due sweep, on a procrastinate worker's app."""
    deferrer = ProcrastinateSimilarity()

    @app.task(name=TASK_NAME, pass_context=False)
    def similarity_job(run_id: int) -> None:
        run_similarity(sessions, run_id, processes=processes)

    @app.periodic(cron="*/5 * * * *", periodic_id="similarity-due")
    @app.task(name=SWEEP_TASK_NAME, pass_context=False, queue="cpu", priority=PRIORITY)
    def similarity_due(timestamp: int) -> None:
        with transaction(sessions) as session:
            sweep_due(session, system_clock(), defer=deferrer.defer)
