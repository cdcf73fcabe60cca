"""Grades sent in the background: the automatic mode, and the LTI page's "Send" button.

A course is due for a job when its link is in automatic mode (``auto_grades``) or an
instructor pressed "Send" (``send_requested_at``), and its retry time (``next_sync_at``) has
come. The job body, :func:`sync_course`, is ``server.lti.grades.apply``: it sends what differs
from what was last sent, so a job that finds nothing new sends nothing, and a failed job
(the LMS down) is retried with a doubling delay and its error shown on the LTI page. Jobs
never run on a learner's request: a verdict, an override or an extension only changes what
``course_scores`` says, and the next sweep sends it.

- **In-process** (``QUEUE=inprocess``): one :class:`LtiGradeSync` thread sweeps every
  ``LTI_POLL_SECONDS`` and starts the due courses' jobs, each in a thread of its own: at most
  :data:`MAX_JOBS` at once, of which at most :data:`MAX_JOBS_PER_PLATFORM` for one LMS, so a
  slow LMS (each answer within the deadline, as slowly as it likes) holds its own jobs'
  threads and never another LMS's grades. A platform's due courses take turns.
- **procrastinate** (``QUEUE=procrastinate``): a periodic task (every minute) on the ``cpu``
  workers defers one ``ppo_grader.lti_grades`` job per due course (a queueing lock per course,
  so a slow job is never doubled), below grading in priority.
Both call :func:`sync_course`; the database, not the queue, says what is due.

The LMS page's "Sync the roster" and "Compare with the LMS gradebook" requests
(``server.lti.tasks``) run the same ways: the in-process thread's sweep claims each queued
request and runs it in a thread of its own, within the same bounds; on procrastinate the
button defers one ``ppo_grader.lti_task`` job (``server.lti.tasks.defer_request``, a queueing lock per
request), and the periodic sweep defers any queued request left without one. Either way the
request is claimed on its status row first (``server.lti.tasks.claim``), so it runs once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import or_, select

from server.db import SessionFactory, transaction
from server.lti import tasks
from server.lti.grades import Applied, apply, plan, record_failure
from server.models import LtiContext, utcnow

if TYPE_CHECKING:
    import procrastinate
    from sqlalchemy.orm import Session

log = logging.getLogger(__name__)

TASK_NAME = "ppo_grader.lti_grades"
SWEEP_TASK_NAME = "ppo_grader.lti_due"
#: Below grading (0) and regrades (-5), beside similarity runs.
PRIORITY = tasks.PRIORITY


def due_courses(session: Session, now: datetime) -> list[int]:
    """Ids of the course links whose grades job is due now."""
    return list(
        session.scalars(
            select(LtiContext.id)
            .where(
                or_(LtiContext.auto_grades.is_(True), LtiContext.send_requested_at.is_not(None)),
                or_(LtiContext.next_sync_at.is_(None), LtiContext.next_sync_at <= now),
            )
            .order_by(LtiContext.id)
        )
    )


def due_links(session: Session, now: datetime) -> list[tuple[int, int]]:
    """(link id, platform id) of the course links whose grades job is due now."""
    due = due_courses(session, now)
    if not due:
        return []
    rows = session.execute(select(LtiContext.id, LtiContext.platform_id).where(LtiContext.id.in_(due))).tuples()
    platforms = {link_id: platform_id for link_id, platform_id in rows}
    return [(link_id, platforms[link_id]) for link_id in due if link_id in platforms]


def sync_course(
    sessions: SessionFactory, link_id: int, secret: bytes, stopping: threading.Event | None = None
) -> Applied | None:
    """The job: send what changed for one course link (None: the link is gone or not due
    any more). Commits what was sent, score by score, and the link's sync state; no
    transaction is open while the LMS answers (``server.lti.grades.apply``)."""
    try:
        with sessions() as session:  # reads only
            link = session.get(LtiContext, link_id)
            if link is None or not (link.auto_grades or link.send_requested_at is not None):
                return None
            if link.auto_grades and link.send_requested_at is None and not plan(session, link).to_send:
                return Applied()  # nothing changed: no token bought, nothing sent
        outcome = apply(sessions, link_id, secret, stopping=stopping)
        if outcome is None:
            return None
    except Exception:
        log.exception("LTI grades job of course link %s failed", link_id)
        with transaction(sessions) as session:  # shown on the LTI page, retried with backoff
            link = session.get(LtiContext, link_id)
            if link is not None:
                record_failure(link, "The grades job failed inside ppo-grader (see the server log).", utcnow())
        return Applied(error="internal error")
    if outcome.error:
        log.warning("LTI grades of course link %s not sent: %s", link_id, outcome.error)
    return outcome


#: Jobs the in-process thread runs at once, and at most per LMS (:class:`LtiGradeSync`).
MAX_JOBS = 8
MAX_JOBS_PER_PLATFORM = 2


class LtiGradeSync:
    """The in-process queue's LTI thread: sweep, then start each due course's job (module
    docstring: bounded in all and per LMS)."""

    def __init__(
        self,
        sessions: SessionFactory,
        secret: bytes,
        poll_seconds: float,
        clock: Callable[[], datetime] = utcnow,
        max_jobs: int = MAX_JOBS,
        per_platform: int = MAX_JOBS_PER_PLATFORM,
    ) -> None:
        self._sessions = sessions
        self._secret = secret
        self._poll = poll_seconds
        self._clock = clock
        self._max_jobs = max_jobs
        self._per_platform = per_platform
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        #: Link id -> (platform id, its thread) of each job in flight.
        self._running: dict[int, tuple[int, threading.Thread]] = {}
        #: Task id -> (platform id, its thread) of each LMS page request in flight.
        self._tasks: dict[int, tuple[int, threading.Thread]] = {}
        #: Link id -> when its last job started (a sweep count): a platform's courses take turns.
        self._turn: dict[int, int] = {}
        self._sweeps = 0
        #: Jobs run (a counted measure for the tests and the log).
        self.jobs_run = 0

    def start(self) -> None:
        """Start the thread (daemon: never blocks exit)."""
        self._thread = threading.Thread(target=self._loop, name="lti-grades", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Finish the scores in hand and stop."""
        self._stopping.set()
        deadline = time.monotonic() + timeout
        if self._thread is not None:
            self._thread.join(timeout)
        with self._lock:
            threads = [thread for _, thread in (*self._running.values(), *self._tasks.values())]
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def sweep(self) -> int:
        """Start every due course's job that fits: not one in flight for it already, fewer than
        ``max_jobs`` in flight and fewer than ``per_platform`` for its LMS (the others wait for a
        later sweep, the longest waiting first). Returns how many started; they run on."""
        with self._sessions() as session:
            due = due_links(session, self._clock())
            asked = tasks.queued(session)
        self._sweeps += 1
        due.sort(key=lambda pair: self._turn.get(pair[0], 0))
        started = self._start_requests(asked)
        for link_id, platform_id in due:
            if self._stopping.is_set():
                break
            with self._lock:
                busy = self._busy()
                if (
                    link_id in self._running
                    or len(busy) >= self._max_jobs
                    or busy.count(platform_id) >= self._per_platform
                ):
                    continue
                thread = threading.Thread(target=self._job, args=(link_id,), name=f"lti-grades-{link_id}", daemon=True)
                self._running[link_id] = (platform_id, thread)
                self._turn[link_id] = self._sweeps
            thread.start()
            started += 1
        return started

    def _busy(self) -> list[int]:
        """The platform of each job and request in flight (the caller holds the lock)."""
        return [platform for platform, _ in (*self._running.values(), *self._tasks.values())]

    def _start_requests(self, asked: list[tuple[int, int]]) -> int:
        """Claim and start the queued LMS page requests that fit (the bounds of :meth:`sweep`)."""
        started = 0
        for task_id, platform_id in asked:
            if self._stopping.is_set():
                break
            with self._lock:
                busy = self._busy()
                if (
                    task_id in self._tasks
                    or len(busy) >= self._max_jobs
                    or busy.count(platform_id) >= self._per_platform
                ):
                    continue
                if not tasks.claim(self._sessions, task_id, self._clock()):
                    continue  # another runner (a second server process) took it
                thread = threading.Thread(
                    target=self._request, args=(task_id,), name=f"lti-task-{task_id}", daemon=True
                )
                self._tasks[task_id] = (platform_id, thread)
            thread.start()
            started += 1
        return started

    def _request(self, task_id: int) -> None:
        try:
            tasks.run(self._sessions, task_id, self._secret)
        except Exception:  # one request's failure must not stop the others or the thread
            log.exception("LTI request %s failed", task_id)
        finally:
            with self._lock:
                self._tasks.pop(task_id, None)
                self.jobs_run += 1

    def _job(self, link_id: int) -> None:
        try:
            sync_course(self._sessions, link_id, self._secret, self._stopping)
        except Exception:  # one course's failure must not stop the others or the thread
            log.exception("LTI grades job of course link %s failed", link_id)
        finally:
            with self._lock:
                self._running.pop(link_id, None)
                self.jobs_run += 1

    def _loop(self) -> None:
        while not self._stopping.wait(self._poll):
            try:
                self.sweep()
            except Exception:
                log.exception("LTI grades sweep failed; trying again later")


def register_tasks(app: procrastinate.App, sessions: SessionFactory, secret: bytes) -> None:
    """The grades job and its periodic sweep, on a procrastinate worker's app."""

    @app.task(name=TASK_NAME, pass_context=False, queue="cpu", priority=PRIORITY)
    def lti_grades(link_id: int) -> None:
        sync_course(sessions, link_id, secret)

    @app.task(name=tasks.TASK_NAME, pass_context=False, queue="cpu", priority=PRIORITY)
    def lti_task(task_id: int) -> None:
        if tasks.claim(sessions, task_id):
            tasks.run(sessions, task_id, secret)

    @app.periodic(cron="* * * * *", periodic_id="lti-grades-due")
    @app.task(name=SWEEP_TASK_NAME, pass_context=False, queue="cpu", priority=PRIORITY)
    def lti_due(timestamp: int) -> None:
        with sessions() as session:
            due = due_courses(session, utcnow())
            asked = tasks.queued(session)
        for link_id in due:
            defer_job(sessions, link_id)
        for task_id, _platform in asked:
            tasks.defer_request(sessions, task_id)


def defer_job(sessions: SessionFactory, link_id: int) -> bool:
    """Queue one course's grades job on procrastinate; False when one is queued already (the
    course's queueing lock), so a slow LMS never piles up jobs."""
    return tasks.defer(sessions, TASK_NAME, f"lti-grades-{int(link_id)}", {"link_id": int(link_id)})
