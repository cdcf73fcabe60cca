"""``/health``: answers while the database answers; reports queue depth and live workers."""

from __future__ import annotations

from fastapi import APIRouter
from sqlalchemy import func, select

from server import __version__
from server.deps import SessionDep, StateDep
from server.health.schemas import Health, QueueDepth
from server.models import Status, Submission

router = APIRouter(tags=["health"])


@router.get("/health", response_model=Health)
def health(session: SessionDep, state: StateDep) -> Health:
    """Status, version, queue depth from the database, live worker threads."""
    rows = session.execute(
        select(Submission.status, func.count())
        .where(Submission.status.in_([Status.QUEUED, Status.RUNNING]))
        .group_by(Submission.status)
    ).tuples()
    counts = {status: count for status, count in rows}
    return Health(
        status="ok",
        version=__version__,
        queue=QueueDepth(queued=counts.get(Status.QUEUED, 0), running=counts.get(Status.RUNNING, 0)),
        workers=state.workers.alive,
    )
