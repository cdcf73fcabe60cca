"""The in-process worker pool: N threads, each claiming a queued row, grading it with the
blocking judge and storing the outcome."""

from __future__ import annotations

import logging
import threading
import time

from server.db import SessionFactory, transaction
from server.grading.grader import GradeFunction
from server.grading.persistence import (
    MAX_ATTEMPTS,
    claim,
    requeue_unfinished,
    store_internal_error,
    store_report,
)
from server.grading.queue import InProcessQueue

log = logging.getLogger(__name__)


class WorkerPool:
    """Threads that grade submissions whose ids arrive on an ``InProcessQueue``.

    Threads rather than asyncio tasks because the judge call is blocking and thread-safe;
    the judge's own pool bounds how many jails run at once.
    """

    def __init__(
        self,
        session_factory: SessionFactory,
        queue: InProcessQueue,
        grade: GradeFunction,
        *,
        workers: int,
        output_cap: int,
    ) -> None:
        self._sessions = session_factory
        self._queue = queue
        self._grade = grade
        self._size = workers
        self._output_cap = output_cap
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()

    @property
    def alive(self) -> int:
        """How many worker threads are running."""
        return sum(thread.is_alive() for thread in self._threads)

    def recover(self) -> list[int]:
        """Re-queue what a crash left ``running``, and enqueue every ``queued`` row."""
        with transaction(self._sessions) as session:
            ids = requeue_unfinished(session)
        for submission_id in ids:
            self._queue.enqueue(submission_id)
        if ids:
            log.info("re-queued %d unfinished submission(s) from a previous run", len(ids))
        return ids

    def start(self) -> None:
        """Start the threads (daemon: a stuck jail must not block interpreter exit)."""
        for index in range(self._size):
            thread = threading.Thread(target=self._run, name=f"grader-{index}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = 30.0) -> None:
        """Ask every thread to finish its current job and exit; wait up to ``timeout``.

        Rows still ``running`` or ``queued`` afterwards are picked up at the next start.
        """
        self._stopping.set()
        self._queue.wake_all(len(self._threads))
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def _run(self) -> None:
        while True:
            submission_id = self._queue.get()
            if submission_id is None or self._stopping.is_set():
                return
            try:
                self.process(submission_id)
            except Exception:  # never let one bad job kill the thread
                log.exception("worker failed on submission %s; it stays for the next start", submission_id)

    def process(self, submission_id: int) -> None:
        """Claim, grade and store one submission (no-op if another worker has it)."""
        with transaction(self._sessions) as session:
            claimed = claim(session, submission_id)
        if claimed is None:
            return
        if claimed.attempts > MAX_ATTEMPTS:
            # It was picked up several times and never finished: it probably takes the
            # process down. Stop retrying, and say it is not the learner's fault.
            with transaction(self._sessions) as session:
                store_internal_error(session, submission_id)
            return

        began = time.perf_counter()
        try:
            report = self._grade(claimed.exercise, claimed.source, claimed.id)
        except Exception:
            if self._stopping.is_set():
                # Shutting down closes the judge under us: leave the row ``running`` so the
                # next start grades it again, rather than blaming an internal error.
                log.info("submission %s interrupted by shutdown; re-queued at next start", submission_id)
                return
            log.exception("grading submission %s raised", submission_id)
            with transaction(self._sessions) as session:
                store_internal_error(session, submission_id)
            return

        extra = {
            "queue_seconds": (claimed.started_at - claimed.created_at).total_seconds(),
            "grade_seconds": time.perf_counter() - began,
        }
        try:
            with transaction(self._sessions) as session:
                store_report(session, submission_id, report, output_cap=self._output_cap, extra_timings=extra)
        except Exception:
            log.exception("storing the report of submission %s failed", submission_id)
            with transaction(self._sessions) as session:
                store_internal_error(session, submission_id)
