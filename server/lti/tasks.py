"""The course LMS page's buttons that ask the LMS: "Sync the roster" and "Compare with the LMS
gradebook". A web request never waits for the LMS: a press records a request, the background
job (``server.lti.jobs``) runs it, and the page reads how it went.

Each course link has one status row per kind (:class:`~server.models.LtiTask`, ``roster`` or
``compare``), reused from press to press: ``queued`` (pressed) -> ``running`` (a job claimed
it) -> ``done`` (``outcome`` says what it did) or ``failed`` (``outcome`` says why, capped).
Every change of state is one compare-and-set statement on the row, so a second press while one
is queued or running is refused (:class:`TaskBusy`, with a message), never a second job, and
of two job runners (two server processes, the procrastinate worker) exactly one claims a
request. A request queued or running for longer than :data:`STALE` (its job crashed, the
server stopped) may be asked again.

A comparison keeps what it read of the LMS's gradebook on its row (``lms_results``: JSON,
at most :data:`MAX_RESULTS` results), and the page shows it beside each score, with the time
it was read, until the next comparison.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, or_, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from server.db import SessionFactory, insert_unless_taken, transaction
from server.lti.errors import LmsUnreachable, LtiError
from server.lti.grades import LmsReading, finite_number, lms_columns, read_lms
from server.lti.roster import RosterSync, sync_roster
from server.lti.services import LmsClient
from server.models import LtiContext, LtiPlatform, LtiTask, utcnow
from server.models.lti import MAX_ERROR_CHARS

log = logging.getLogger(__name__)

#: The procrastinate task that runs one request (``server.lti.jobs``).
TASK_NAME = "ppo_grader.lti_task"
#: Below grading (0) and regrades (-5), beside similarity runs (as the grades jobs).
PRIORITY = -10
ROSTER, COMPARE = "roster", "compare"
#: What each kind is called on the page and in messages.
KINDS = {ROSTER: "roster sync", COMPARE: "comparison with the LMS gradebook"}
QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
#: A request queued or running this long is taken as lost (a crash): it may be asked again.
STALE = timedelta(minutes=15)
#: Most results of the LMS's gradebook a comparison keeps.
MAX_RESULTS = 20_000


class TaskBusy(LtiError):
    """A press while the same request of the course is queued or running."""

    status_code = 409


def request(session: Session, link: LtiContext, kind: str, now: datetime) -> LtiTask:
    """Queue a ``kind`` request for the course link (the caller commits); :class:`TaskBusy`
    while one is queued or running (and not :data:`STALE`)."""
    assert kind in KINDS
    fresh = {"state": QUEUED, "requested_at": now, "started_at": None, "finished_at": None, "outcome": None}
    if insert_unless_taken(session, LtiTask, {"context_id": link.id, "kind": kind, **fresh}) is None:
        stale = now - STALE
        taken = session.execute(  # compared and set: of two presses at once, one queues it
            update(LtiTask)
            .where(
                LtiTask.context_id == link.id,
                LtiTask.kind == kind,
                or_(
                    LtiTask.state.in_((DONE, FAILED)),
                    and_(LtiTask.state == QUEUED, LtiTask.requested_at <= stale),
                    and_(LtiTask.state == RUNNING, LtiTask.started_at <= stale),
                ),
            )
            .values(**fresh)
            .execution_options(synchronize_session=False)
        )
        if taken.rowcount != 1:  # type: ignore[attr-defined]
            raise TaskBusy(
                f"A {KINDS[kind]} of this course is already queued or running: this page shows its outcome "
                "when it is done (reload it)."
            )
    row = session.scalar(
        select(LtiTask)
        .where(LtiTask.context_id == link.id, LtiTask.kind == kind)
        .execution_options(populate_existing=True)
    )
    assert row is not None
    return row


def status(session: Session, link: LtiContext) -> dict[str, LtiTask]:
    """The course link's status rows, by kind (those ever pressed)."""
    return {row.kind: row for row in session.scalars(select(LtiTask).where(LtiTask.context_id == link.id))}


def queued(session: Session) -> list[tuple[int, int]]:
    """(task id, platform id) of every queued request, oldest first."""
    rows = session.execute(
        select(LtiTask.id, LtiContext.platform_id)
        .join(LtiContext, LtiContext.id == LtiTask.context_id)
        .where(LtiTask.state == QUEUED)
        .order_by(LtiTask.requested_at, LtiTask.id)
    ).tuples()
    return list(rows)


def claim(sessions: SessionFactory, task_id: int, now: datetime | None = None) -> bool:
    """Take a queued request for this job (queued -> running, compared and set): False when
    another runner took it, or it is not queued."""
    with transaction(sessions) as session:
        taken = session.execute(
            update(LtiTask)
            .where(LtiTask.id == task_id, LtiTask.state == QUEUED)
            .values(state=RUNNING, started_at=now or utcnow())
            .execution_options(synchronize_session=False)
        )
        return taken.rowcount == 1  # type: ignore[attr-defined]


@dataclass(frozen=True)
class _Claimed:
    kind: str
    link_id: int


def run(sessions: SessionFactory, task_id: int, secret: bytes) -> str | None:
    """The job: run a claimed (running) request and record its outcome; returns the state it
    ended in (None: not running, or its course link is gone). No transaction is open while the
    LMS answers."""
    with sessions() as session:
        row = session.get(LtiTask, task_id)
        if row is None or row.state != RUNNING:
            return None
        claimed = _Claimed(row.kind, row.context_id)
    results: str | None = None
    try:
        if claimed.kind == ROSTER:
            state, outcome = DONE, _roster_outcome(sync_roster(sessions, claimed.link_id, secret))
        else:
            reading = _compare(sessions, claimed.link_id, secret)
            results = _stored(reading)
            state = FAILED if reading.error else DONE
            outcome = reading.error or f"Read {len(reading.results)} result(s) from the LMS's gradebook."
    except LmsUnreachable as exc:
        state, outcome = FAILED, exc.detail + " Nothing was changed."
    except Exception:  # a bug or the database: shown as such, the details in the log
        log.exception("LTI %s request %s failed", claimed.kind, task_id)
        state, outcome = FAILED, "The job failed inside ppo-grader (see the server log)."
    with transaction(sessions) as session:
        values: dict[str, object] = {"state": state, "finished_at": utcnow(), "outcome": outcome[:MAX_ERROR_CHARS]}
        if claimed.kind == COMPARE:
            values["lms_results"] = results
        session.execute(
            update(LtiTask)
            .where(LtiTask.id == task_id, LtiTask.state == RUNNING)
            .values(**values)
            .execution_options(synchronize_session=False)
        )
    return state


def _roster_outcome(done: RosterSync) -> str:
    return (
        f"Added {len(done.added)}, roles changed {len(done.role_changed)}, dropped {len(done.dropped)}, "
        f"{done.unchanged} unchanged, {done.skipped} skipped (no role in the course), "
        f"{done.invalid} left out (their id or roles are not valid text)."
    )


def _compare(sessions: SessionFactory, link_id: int, secret: bytes) -> LmsReading:
    with sessions() as session:  # reads only: closed before the LMS is asked
        link = session.get(LtiContext, link_id)
        if link is None:
            raise LmsUnreachable("The course is no longer linked to an LMS course.")
        platform = session.get(LtiPlatform, link.platform_id)
        assert platform is not None
        columns = lms_columns(session, link)
        session.expunge(platform)
    with LmsClient(sessions, secret, platform) as client:
        return read_lms(client, columns)


def _stored(reading: LmsReading) -> str:
    kept = list(reading.results.items())[:MAX_RESULTS]
    return json.dumps(
        {
            "read_at": reading.read_at.isoformat() if reading.read_at else None,
            "error": reading.error,
            "results": [[sub, exercise, value] for (sub, exercise), value in kept],
        }
    )


def reading_of(row: LtiTask | None) -> LmsReading | None:
    """What the last comparison read (None: never compared, or unreadable)."""
    if row is None or not row.lms_results:
        return None
    try:
        data = json.loads(row.lms_results)
        results = {
            (str(sub), str(exercise)): finite_number(value)  # a stored 10**400 or NaN: unreadable, not a crash
            for sub, exercise, value in data.get("results", [])[:MAX_RESULTS]
        }
        read_at = datetime.fromisoformat(data["read_at"]) if data.get("read_at") else None
    except (ValueError, TypeError, AttributeError, KeyError, RecursionError):
        return None
    error = data.get("error")
    return LmsReading(results, error if isinstance(error, str) else None, read_at)


_DEFER_SQL = text(
    "SELECT procrastinate_defer_jobs_v1(ARRAY[ROW("
    "'cpu'::varchar, CAST(:task AS varchar), CAST(:priority AS integer), NULL::text, CAST(:lock AS text), "
    "CAST(:args AS jsonb), NULL::timestamptz)::procrastinate_job_to_defer_v1])"
)


def defer(sessions: SessionFactory, task: str, lock: str, args: dict[str, int]) -> bool:
    """Queue one LTI job on procrastinate (its ``cpu`` queue, below grading); False when one
    holding ``lock`` is queued already, so a slow LMS never piles up jobs."""
    try:
        with transaction(sessions) as session:
            session.execute(_DEFER_SQL, {"task": task, "priority": PRIORITY, "lock": lock, "args": json.dumps(args)})
    except IntegrityError:
        return False
    return True


def defer_request(sessions: SessionFactory, task_id: int) -> bool:
    """Queue one request's job on procrastinate (``QUEUE=procrastinate``); False when one is
    queued already."""
    return defer(sessions, TASK_NAME, f"lti-task-{int(task_id)}", {"task_id": int(task_id)})
