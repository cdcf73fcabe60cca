"""The in-process worker pool: N threads, each claiming a queued row, grading it with the
blocking judge and storing the outcome; and ``process_submission``, the job body that
the procrastinate workers run too."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable

from sqlalchemy.orm import Session

from exercises.versions import split_ref
from server.catalog.versions import UNVERIFIED, UNVERIFIED_MESSAGE
from server.db import SessionFactory, transaction
from server.grading import counters
from server.grading.grader import GradeFunction, verdict_versions
from server.grading.persistence import (
    MAX_ATTEMPTS,
    Claimed,
    claim,
    requeue_unfinished,
    return_to_queue,
    store_internal_error,
    store_report,
)
from server.grading.queue import InProcessQueue, Job
from server.grading.regrade_jobs import process_regrade, queued_results, requeue_unfinished_results
from server.logging_setup import submission_context
from server.models import Verdict

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
        on_verdict: Callable[[int], None] | None = None,
        regrade_poll_seconds: float = 0.0,
    ) -> None:
        self._sessions = session_factory
        self._on_verdict = on_verdict
        self._queue = queue
        self._grade = grade
        self._size = workers
        self._output_cap = output_cap
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        #: Set when ``stop`` stopped waiting for the jobs in hand: what they grade now is not stored.
        self._given_up = threading.Event()
        #: The job each busy thread holds (by thread id), for ``stop`` to hand back.
        self._in_hand: dict[int, Job] = {}
        self._in_hand_lock = threading.Lock()
        #: How often to look for regrade results another process queued (0: never).
        self._regrade_poll = regrade_poll_seconds
        self._poller: threading.Thread | None = None

    @property
    def alive(self) -> int:
        """How many worker threads are running."""
        return sum(thread.is_alive() for thread in self._threads)

    def recover(self) -> list[int]:
        """Re-queue what a crash left ``running``, and enqueue every ``queued`` row."""
        with transaction(self._sessions) as session:
            rows = requeue_unfinished(session)
        for submission_id, owner in rows:
            self._queue.enqueue(submission_id, owner)
        if rows:
            log.info("re-queued %d unfinished submission(s) from a previous run", len(rows))
        return [submission_id for submission_id, _ in rows]

    def start(self) -> None:
        """Start the threads (daemon: a stuck jail must not block interpreter exit)."""
        for index in range(self._size):
            thread = threading.Thread(target=self._run, name=f"grader-{index}", daemon=True)
            thread.start()
            self._threads.append(thread)
        if self._regrade_poll > 0:
            self._poller = threading.Thread(target=self._poll_loop, name="regrade-poll", daemon=True)
            self._poller.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Ask every thread to finish its current job and exit; wait up to ``timeout``.

        Then give up on the jobs still in hand: whatever they grade from now on is not stored
        (the judge is closed under them next), and their submissions go back to ``queued``
        with the attempt not counted, so a restart grades them as if they had never started.
        Rows ``queued`` (and regrade results left ``running``) are picked up at the next start.
        """
        self._stopping.set()
        self._queue.wake_all(len(self._threads))
        deadline = time.monotonic() + timeout
        for thread in [*self._threads, *([self._poller] if self._poller else [])]:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._given_up.set()
        with self._in_hand_lock:
            busy = sorted(job.id for job in self._in_hand.values() if job.kind == "submission")
        if not busy:
            return
        with transaction(self._sessions) as session:
            returned = return_to_queue(session, busy)
        log.info("shutdown: %d submission(s) still grading went back to the queue: %s", len(returned), returned)

    def recover_regrades(self) -> list[int]:
        """Re-queue the regrade results a crash left ``running``; hand over every queued one."""
        with transaction(self._sessions) as session:
            ids = requeue_unfinished_results(session)
        self._queue.enqueue_regrades(ids)
        return ids

    def poll_regrades(self) -> int:
        """Hand over regrade results queued by another process (``ppo-grader regrade preview``
        writes them to the database); only when none is waiting here, so none is handed twice
        (a duplicate would only lose its claim). Returns how many were handed over."""
        if self._queue.regrades_waiting():
            return 0
        with self._sessions() as session:
            ids = queued_results(session)
        self._queue.enqueue_regrades(ids)
        return len(ids)

    def _poll_loop(self) -> None:
        while not self._stopping.wait(self._regrade_poll):
            try:
                self.poll_regrades()
            except Exception:
                log.exception("looking for queued regrades failed; trying again")

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            if job is None or self._stopping.is_set():
                return
            with self._in_hand_lock:
                self._in_hand[threading.get_ident()] = job
            try:
                if job.kind == "regrade":
                    process_regrade(
                        self._sessions, self._grade, job.id, output_cap=self._output_cap, stopping=self._given_up.is_set
                    )
                else:
                    self.process(job.id)
            except Exception:  # never let one bad job kill the thread
                log.exception("worker failed on %s %s; it stays for the next start", job.kind, job.id)
            finally:
                with self._in_hand_lock:
                    self._in_hand.pop(threading.get_ident(), None)
                self._queue.finished(job)

    def process(self, submission_id: int) -> None:
        """Claim, grade and store one submission (no-op if another worker has it)."""
        process_submission(
            self._sessions,
            self._grade,
            submission_id,
            output_cap=self._output_cap,
            claim_row=claim,
            stopping=self._given_up.is_set,
        )
        if self._on_verdict is not None:
            self._on_verdict(submission_id)


def _test_hooks(source: str) -> None:
    """Inert unless set: make a job kill or stall its worker, for the crash-safety tests.

    ``PPO_GRADER_TEST_CRASH_ON=<marker>``: SIGKILL this process when the source contains
    the marker. ``PPO_GRADER_TEST_HOLD_ON=<marker>``: sleep
    ``PPO_GRADER_TEST_HOLD_SECONDS`` (default 30) before grading such a source.
    """
    crash = os.environ.get("PPO_GRADER_TEST_CRASH_ON")
    if crash and crash in source:
        log.warning("test hook: killing this worker (PPO_GRADER_TEST_CRASH_ON)")
        os.kill(os.getpid(), signal.SIGKILL)
    hold = os.environ.get("PPO_GRADER_TEST_HOLD_ON")
    if hold and hold in source:
        log.warning("test hook: holding this job (PPO_GRADER_TEST_HOLD_ON)")
        time.sleep(float(os.environ.get("PPO_GRADER_TEST_HOLD_SECONDS", "30")))


def process_submission(
    sessions: SessionFactory,
    grade: GradeFunction,
    submission_id: int,
    *,
    output_cap: int,
    claim_row: Callable[[Session, int], Claimed | None] = claim,
    stopping: Callable[[], bool] = lambda: False,
    fenced: bool = False,
) -> str | None:
    """Claim, grade and store one submission: the one job body of every queue backend.

    Returns the stored verdict, or None when nothing was stored (someone else has the row,
    or shutdown interrupted the grading: ``stopping()`` turned True, after which the judge
    may be closed under the job and no outcome of it is believed). With ``fenced``, results
    are stored only while the row's ``attempts`` still equals our claim's (a redelivered job
    took over otherwise).
    """
    with submission_context(submission_id):
        with transaction(sessions) as session:
            claimed = claim_row(session, submission_id)
        if claimed is None:
            log.info("submission already claimed or finished; skipping")
            return None
        attempt = claimed.attempts if fenced else None
        log.info("claimed", extra={"exercise": claimed.exercise, "attempt": claimed.attempts})
        if claimed.attempts > MAX_ATTEMPTS:
            # It was picked up several times and never finished: it probably takes the
            # process down. Stop retrying, and say it is not the learner's fault.
            log.error("gave up after %d attempts (poison job): internal_error", claimed.attempts - 1)
            with transaction(sessions) as session:
                store_internal_error(session, submission_id, attempt=attempt)
            counters.observe_verdict(claimed, Verdict.INTERNAL_ERROR.value)
            return Verdict.INTERNAL_ERROR.value

        _test_hooks(claimed.source)
        # Read before grading: the versions of the code this process grades with.
        ref = claimed.ref or claimed.exercise
        if split_ref(ref)[1] == UNVERIFIED:
            # A pack exercise with no verified version: never graded with whatever its folder holds.
            log.warning("exercise has no verified version: not graded (internal_error)")
            with transaction(sessions) as session:
                store_internal_error(session, submission_id, UNVERIFIED_MESSAGE, attempt=attempt)
            counters.observe_verdict(claimed, Verdict.INTERNAL_ERROR.value)
            return Verdict.INTERNAL_ERROR.value
        versions = verdict_versions(ref)
        began = time.perf_counter()
        try:
            report = grade(ref, claimed.source, claimed.id)
        except Exception:
            if stopping():
                # Shutting down closes the judge under us: leave the row ``running`` so the
                # next start (or another worker) grades it again, rather than blaming an
                # internal error.
                log.info("interrupted by shutdown; it will be graded again")
                return None
            log.exception("grading raised")
            with transaction(sessions) as session:
                store_internal_error(session, submission_id, attempt=attempt)
            counters.observe_verdict(claimed, Verdict.INTERNAL_ERROR.value)
            return Verdict.INTERNAL_ERROR.value
        if stopping():
            # Finished after the shutdown gave up on it: its jail may have been killed under
            # it (an internal_error that is no one's), and the row is back in the queue.
            log.info("graded after the shutdown gave up on it; not stored, graded again at the next start")
            return None

        extra = {
            "queue_seconds": (claimed.started_at - claimed.created_at).total_seconds(),
            "grade_seconds": time.perf_counter() - began,
        }
        try:
            with transaction(sessions) as session:
                stored = store_report(
                    session,
                    submission_id,
                    report,
                    output_cap=output_cap,
                    extra_timings=extra,
                    attempt=attempt,
                    versions=versions,
                )
        except Exception:
            log.exception("storing the report failed")
            with transaction(sessions) as session:
                store_internal_error(session, submission_id, attempt=attempt)
            counters.observe_verdict(claimed, Verdict.INTERNAL_ERROR.value)
            return Verdict.INTERNAL_ERROR.value
        if not stored:
            log.warning("result not stored: the row was re-queued or taken over meanwhile")
            return None
        log.info(
            "graded",
            extra={
                "exercise": claimed.exercise,
                "verdict": report.verdict,
                "score": report.score,
                "grade_seconds": round(extra["grade_seconds"], 4),
            },
        )
        counters.observe_verdict(claimed, report.verdict)
        return str(report.verdict)
