"""The scale-out queue: procrastinate on PostgreSQL (``PPO_GRADER_QUEUE=procrastinate``).

* **Enqueue in the submission's transaction.** ``ProcrastinateQueue.defer`` calls
  procrastinate's own SQL function ``procrastinate_defer_jobs_v1`` through the SQLAlchemy
  session that inserts the submission, so the job row and the submission row commit (or
  roll back) together; the API needs no procrastinate connection at all.
* **Workers** (``ppo-grader worker --queue cpu|gpu --concurrency N``) run a procrastinate
  worker whose one task calls ``process_submission`` -- the same job body (claim, grade
  with ``grade_submission``, store) as the in-process pool.
* **Crash safety.** Each worker sends a heartbeat; every worker also runs a reaper that
  sends back to ``todo`` the ``doing`` jobs of workers whose heartbeat is older than
  ``WORKER_STALLED_SECONDS`` (``JobManager.get_stalled_jobs`` + ``retry_job``, the recipe of
  procrastinate's docs). The retried job claims the row again (``claim_job``), which counts
  ``attempts``; beyond ``MAX_ATTEMPTS`` the row ends as ``internal_error``. Results are
  fenced by the attempt number, so a worker wrongly declared dead cannot overwrite.
* **Queues.** ``cpu`` for every exercise, ``gpu`` for the slugs in ``GPU_EXERCISES`` when
  ``GPU_WORKERS=true`` (then run at least one ``ppo-grader worker --queue gpu``).
* **Fair between learners.** A job's priority is minus the number of the learner's
  submissions already queued or running when it is deferred (``live_priority``), so a
  learner's first job goes before the second jobs of everyone else: one learner who keeps
  five slow jobs queued holds another learner's job behind the jobs running, no more.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select, text
from sqlalchemy.engine import make_url

from exercises import registry
from server.catalogue.versions import version_source
from server.config import Settings
from server.db import make_engine, make_session_factory
from server.grading.grader import build_judge, grade_submission
from server.grading.persistence import claim_job
from server.grading.regrade_jobs import process_regrade
from server.grading.worker import process_submission
from server.lti.jobs import register_tasks as register_lti_tasks
from server.models import RegradeSet, Status, Submission
from server.similarity.jobs import register_tasks as register_similarity_tasks

if TYPE_CHECKING:
    import procrastinate
    from sqlalchemy.orm import Session

log = logging.getLogger(__name__)

TASK_NAME = "ppo_grader.grade"
REGRADE_TASK_NAME = "ppo_grader.regrade"
QUEUES = ("cpu", "gpu")
#: Regrade jobs: below live grading (priority 0; procrastinate takes the highest first), above
#: similarity runs (-10). A learner's submission is never queued behind a regrade.
REGRADE_PRIORITY = -5

#: Live grading's lowest priority: a learner's sixth waiting job still goes before regrades.
LOWEST_LIVE_PRIORITY = REGRADE_PRIORITY + 1

_DEFER_SQL = text(
    "SELECT procrastinate_defer_jobs_v1(ARRAY[ROW("
    "CAST(:queue AS varchar), CAST(:task AS varchar), CAST(:priority AS integer), NULL::text, NULL::text, "
    "CAST(:args AS jsonb), NULL::timestamptz)::procrastinate_job_to_defer_v1])"
)


def conninfo(database_url: str) -> str:
    """A libpq URI for procrastinate's psycopg connector from our SQLAlchemy URL."""
    url = make_url(database_url)
    if url.get_backend_name() != "postgresql":
        raise ValueError("QUEUE=procrastinate needs a PostgreSQL DATABASE_URL (postgresql+psycopg://...)")
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def queue_for(exercise: str, settings: Settings) -> str:
    """``gpu`` for exercises whose checks need CUDA when GPU workers exist, else ``cpu``."""
    gpu_slugs = {slug.strip() for slug in settings.GPU_EXERCISES.split(",") if slug.strip()}
    return "gpu" if settings.GPU_WORKERS and exercise in gpu_slugs else "cpu"


class ProcrastinateQueue:
    """Writes procrastinate job rows in the caller's transaction."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings

    def defer(self, session: Session, submission: Submission) -> None:
        """Insert the job in the transaction that inserts the submission, ranked among the
        learner's own (``live_priority``)."""
        session.execute(
            _DEFER_SQL,
            {
                "queue": queue_for(submission.exercise, self._settings),
                "task": TASK_NAME,
                "priority": live_priority(session, submission),
                "args": json.dumps({"submission_id": int(submission.id)}),
            },
        )

    def enqueue(self, submission_id: int, owner: int | None = None) -> None:
        """Nothing after the commit: the job was committed with the row."""

    def defer_regrade(self, session: Session, regrade: RegradeSet) -> None:
        """A job per queued result of the set, in the transaction that stores them."""
        defer_regrade(session, regrade.id, regrade.exercise, self._settings)

    def enqueue_regrades(self, result_ids: Iterable[int]) -> None:
        """Nothing after the commit: the jobs were committed with the results."""

    def depth(self, session: Session) -> dict[str, int]:
        """``todo`` jobs per queue."""
        counts = dict.fromkeys(QUEUES, 0)
        rows = session.execute(
            text("SELECT queue_name, count(*) FROM procrastinate_jobs WHERE status = 'todo' GROUP BY queue_name")
        )
        for name, count in rows:
            counts[name] = int(count)
        return counts


def live_priority(session: Session, submission: Submission) -> int:
    """Minus how many of the learner's other submissions are queued or running (procrastinate
    takes the highest priority first, then the oldest), down to :data:`LOWEST_LIVE_PRIORITY`.
    Counted in the submission's own transaction, after the learner's lock
    (``users.service.lock_learner``), so two of their requests cannot both count 0."""
    ahead = session.scalar(
        select(func.count())
        .select_from(Submission)
        .where(
            Submission.user_id == submission.user_id,
            Submission.id != submission.id,
            Submission.status.in_([Status.QUEUED.value, Status.RUNNING.value]),
        )
    )
    return max(LOWEST_LIVE_PRIORITY, -int(ahead or 0))


# One statement for a whole set: a job per queued result, on the exercise's queue.
_DEFER_REGRADE_SQL = text(
    "SELECT procrastinate_defer_jobs_v1(ARRAY(SELECT ROW("
    "CAST(:queue AS varchar), CAST(:task AS varchar), CAST(:priority AS integer), NULL::text, NULL::text, "
    "jsonb_build_object('result_id', r.id), NULL::timestamptz)::procrastinate_job_to_defer_v1 "
    "FROM regrade_results r WHERE r.set_id = :set_id AND r.status = 'queued' ORDER BY r.id))"
)


def defer_regrade(session: Session, set_id: int, exercise: str, settings: Settings) -> None:
    """Insert a regrade job per queued result of the set, in the caller's transaction."""
    session.execute(
        _DEFER_REGRADE_SQL,
        {
            "queue": queue_for(exercise, settings),
            "task": REGRADE_TASK_NAME,
            "priority": REGRADE_PRIORITY,
            "set_id": int(set_id),
        },
    )


class RemoteWorkers:
    """Stands in for the in-process pool in the API when workers are other processes."""

    def __init__(self, session_factory: Any, settings: Settings) -> None:
        self._sessions = session_factory
        self._settings = settings

    @property
    def alive(self) -> int:
        """Worker processes with a fresh heartbeat."""
        with self._sessions() as session:
            count = session.scalar(
                text(
                    "SELECT count(*) FROM procrastinate_workers WHERE last_heartbeat > now() - make_interval(secs => :s)"
                ),
                {"s": float(self._settings.WORKER_STALLED_SECONDS)},
            )
        return int(count or 0)

    def recover(self) -> list[int]:
        """Nothing: stalled jobs are retried by the workers' reapers."""
        return []

    def start(self) -> None:
        """Nothing to start in the API process."""

    def stop(self, timeout: float = 0) -> None:
        """Nothing to stop in the API process."""


async def reap_stalled(app: procrastinate.App, settings: Settings) -> None:
    """Forever: send the jobs of dead workers back to ``todo`` (another worker takes them)."""
    while True:
        try:
            stalled = await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=settings.WORKER_STALLED_SECONDS)
            for job in stalled:
                try:
                    await app.job_manager.retry_job(job)
                    log.warning("retrying job %s of a dead worker", job.id, extra={"job_id": job.id})
                except Exception:  # another reaper won the race; the job is no longer doing
                    log.debug("job %s already retried", job.id)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("stalled-job reaper failed; trying again")
        await asyncio.sleep(settings.WORKER_REAPER_SECONDS)


def build_app(settings: Settings) -> procrastinate.App:
    """A procrastinate app on the settings' database (no task registered)."""
    import procrastinate

    return procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=conninfo(settings.DATABASE_URL)))


def run_worker(settings: Settings, queue: str, concurrency: int, metrics_port: int | None = None) -> None:
    """``ppo-grader worker``: grade jobs of one queue until SIGTERM/SIGINT.

    On SIGTERM procrastinate stops fetching and waits (up to ``WALL_SECONDS + 10``) for the
    jobs in hand to finish; a job still running after that is left ``doing`` without a
    worker and the reapers send it back to ``todo``.
    """
    if queue not in QUEUES:
        raise ValueError(f"unknown queue {queue!r}; use one of {', '.join(QUEUES)}")
    if metrics_port:
        from prometheus_client import start_http_server

        start_http_server(metrics_port)
    engine = make_engine(settings.DATABASE_URL)
    sessions = make_session_factory(engine)
    registry.use_version_source(version_source(sessions))  # published versions, without a restart
    judge = build_judge(
        settings.model_copy(update={"WORKERS": concurrency}), device="cuda" if queue == "gpu" else "cpu"
    )
    grade = functools.partial(grade_submission, judge=judge)
    app = build_app(settings)

    @app.task(name=TASK_NAME, pass_context=False)
    def grade_job(submission_id: int) -> None:
        process_submission(
            sessions, grade, submission_id, output_cap=settings.OUTPUT_BYTES, claim_row=claim_job, fenced=True
        )

    @app.task(name=REGRADE_TASK_NAME, pass_context=False)
    def regrade_job(result_id: int) -> None:
        process_regrade(sessions, grade, result_id, output_cap=settings.OUTPUT_BYTES, redelivered=True)

    if queue == "cpu":
        register_similarity_tasks(
            app, sessions, settings.SIMILARITY_PROCESSES
        )  # similarity runs, below every grading job's priority
        register_lti_tasks(app, sessions, settings.secret_bytes)  # LTI grades back to the LMS, the same

    async def main() -> None:
        async with app.open_async():
            reaper = asyncio.create_task(reap_stalled(app, settings))
            try:
                await app.run_worker_async(
                    queues=[queue],
                    concurrency=concurrency,
                    name=f"ppo-grader-{queue}",
                    update_heartbeat_interval=settings.WORKER_HEARTBEAT_SECONDS,
                    stalled_worker_timeout=settings.WORKER_STALLED_SECONDS,
                    shutdown_graceful_timeout=settings.WALL_SECONDS + 10,
                )
            finally:
                reaper.cancel()

    log.info("worker starting", extra={"queue": queue, "concurrency": concurrency})
    try:
        asyncio.run(main())
    finally:
        judge.close()
        engine.dispose()
        log.info("worker stopped", extra={"queue": queue})
