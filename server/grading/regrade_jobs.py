"""Grading a regrade set's results: the job body every queue runs, and its state changes.

A result is graded like a live submission (the same judge, jail and seed: the submission's
id), but its verdict goes into ``regrade_results``, never onto the submission: nothing a
learner sees changes until an instructor applies the set. Each step is one transaction:

- ``claim_result``: ``queued`` (or, for a queue that redelivers, ``running``) to ``running``,
  only while its set is still ``grading`` (a cancelled set's results are gone);
- ``store_result``: the cleaned report, fenced by the claim's attempt number;
- ``settle``: a set whose results are all ``done`` becomes ``ready`` (run after each store, and
  by readers, so a crash between the two never leaves a finished set ``grading``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import exists, select, update
from sqlalchemy.orm import Session

from exercises.versions import UNKNOWN_VERSION, exercise_ref
from server.db import SessionFactory, transaction
from server.grading.grader import GradeFunction, verdict_versions
from server.grading.persistence import INTERNAL_ERROR_MESSAGE, MAX_ATTEMPTS, storable
from server.models import RegradeResult, RegradeSet, RegradeState, Submission, Verdict, utcnow

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClaimedResult:
    """What a worker needs to grade one result it now owns."""

    id: int
    set_id: int
    submission_id: int
    exercise: str
    source: str
    filename: str | None
    attempts: int
    #: The content version the set grades with (named by its preview: server.catalog.versions).
    version: str = ""


def claim_result(session: Session, result_id: int, *, redelivered: bool = False) -> ClaimedResult | None:
    """Take one result for grading (a compare-and-set by id); None when it is not ours to grade."""
    statuses = ["queued", "running"] if redelivered else ["queued"]
    live_set = exists().where(RegradeSet.id == RegradeResult.set_id, RegradeSet.state == RegradeState.GRADING)
    done = session.execute(
        update(RegradeResult)
        .where(RegradeResult.id == result_id, RegradeResult.status.in_(statuses), live_set)
        .values(status="running", attempts=RegradeResult.attempts + 1)
        .execution_options(synchronize_session=False)
    )
    if done.rowcount != 1:  # type: ignore[attr-defined]
        return None
    row = session.execute(
        select(
            RegradeResult.set_id,
            RegradeResult.submission_id,
            RegradeResult.attempts,
            Submission.exercise,
            Submission.source,
            Submission.filename,
            RegradeSet.content_version,
        )
        .join(Submission, Submission.id == RegradeResult.submission_id)
        .join(RegradeSet, RegradeSet.id == RegradeResult.set_id)
        .where(RegradeResult.id == result_id)
    ).one()
    return ClaimedResult(
        result_id,
        row.set_id,
        row.submission_id,
        row.exercise,
        row.source,
        row.filename,
        row.attempts,
        row.content_version or "",
    )


def store_result(
    session: Session,
    claimed: ClaimedResult,
    report: object,
    *,
    output_cap: int,
    versions: tuple[str, str],
    fenced: bool,
) -> bool:
    """Store a report into the result row; False when the row is gone (set cancelled) or,
    with ``fenced``, a later claim of it has taken over."""
    result = session.get(RegradeResult, claimed.id, with_for_update=True)
    if result is None or result.status != "running" or (fenced and result.attempts != claimed.attempts):
        return False
    clean = storable(report, claimed.filename, output_cap=output_cap)  # type: ignore[arg-type]
    result.verdict = clean.verdict.value
    result.score = clean.score
    result.message = clean.message
    result.checks = clean.checks
    result.feedback = clean.feedback
    result.stdout, result.stderr = clean.stdout, clean.stderr
    result.timings = clean.timings
    result.peak_memory_bytes = clean.peak_memory_bytes
    result.cpu_seconds = clean.cpu_seconds
    result.content_version, result.grader_version = versions
    result.status = "done"
    result.finished_at = utcnow()
    return True


def store_internal_error(session: Session, claimed: ClaimedResult) -> None:
    """The grader failed on this result: recorded as such; an apply never takes it."""
    result = session.get(RegradeResult, claimed.id, with_for_update=True)
    if result is None or result.status == "done":
        return
    result.verdict = Verdict.INTERNAL_ERROR.value
    result.score = None
    result.message = INTERNAL_ERROR_MESSAGE
    result.checks = []
    result.status = "done"
    result.finished_at = utcnow()


def settle(session: Session, set_id: int) -> bool:
    """``grading`` -> ``ready`` once no result of the set is left to grade; True if it is ready."""
    pending = exists().where(RegradeResult.set_id == set_id, RegradeResult.status != "done")
    session.execute(
        update(RegradeSet)
        .where(RegradeSet.id == set_id, RegradeSet.state == RegradeState.GRADING, ~pending)
        .values(state=RegradeState.READY)
        .execution_options(synchronize_session=False)
    )
    return session.scalar(select(RegradeSet.state).where(RegradeSet.id == set_id)) == RegradeState.READY


def process_regrade(
    sessions: SessionFactory,
    grade: GradeFunction,
    result_id: int,
    *,
    output_cap: int,
    redelivered: bool = False,
    stopping: Callable[[], bool] = lambda: False,
) -> str | None:
    """Claim, grade and store one regrade result: the job body of both queues.

    The seed is the submission's id, as for its first verdict, so the cases are the same and
    only a change of the exercise or the grader can move the verdict. Returns the verdict
    stored, or None when nothing was (not ours, cancelled, or interrupted by shutdown).
    """
    with transaction(sessions) as session:
        claimed = claim_result(session, result_id, redelivered=redelivered)
    if claimed is None:
        return None
    if claimed.attempts > MAX_ATTEMPTS:
        log.error("regrade result %s gave up after %d attempts: internal_error", result_id, claimed.attempts - 1)
        with transaction(sessions) as session:
            store_internal_error(session, claimed)
    else:
        # Exactly the version the preview names, whatever this process loaded (issue 32).
        ref = exercise_ref(claimed.exercise, claimed.version if claimed.version != UNKNOWN_VERSION else None)
        versions = verdict_versions(ref)
        began = time.perf_counter()
        try:
            report = grade(ref, claimed.source, claimed.submission_id)
        except Exception:
            if stopping():
                return None  # left running: the next start grades it again
            log.exception("regrading submission %s raised", claimed.submission_id)
            with transaction(sessions) as session:
                store_internal_error(session, claimed)
        else:
            if stopping():
                return None  # finished after the shutdown gave up on it: graded again at the next start
            with transaction(sessions) as session:
                if not store_result(
                    session, claimed, report, output_cap=output_cap, versions=versions, fenced=redelivered
                ):
                    return None
            log.info(
                "regraded",
                extra={
                    "regrade": claimed.set_id,
                    "verdict": report.verdict,
                    "grade_seconds": round(time.perf_counter() - began, 4),
                },
            )
    with transaction(sessions) as session:
        settle(session, claimed.set_id)
    with sessions() as session:
        return session.scalar(select(RegradeResult.verdict).where(RegradeResult.id == result_id))


def requeue_unfinished_results(session: Session) -> list[int]:
    """After a restart (in-process queue): results left ``running`` go back to ``queued``;
    returns every queued result id of a set still grading, oldest first."""
    grading = select(RegradeSet.id).where(RegradeSet.state == RegradeState.GRADING)
    session.execute(
        update(RegradeResult)
        .where(RegradeResult.status == "running", RegradeResult.set_id.in_(grading))
        .values(status="queued")
        .execution_options(synchronize_session=False)
    )
    return queued_results(session)


def queued_results(session: Session, limit: int = 100_000) -> list[int]:
    """Queued result ids of sets still grading, oldest first."""
    grading = select(RegradeSet.id).where(RegradeSet.state == RegradeState.GRADING)
    return list(
        session.scalars(
            select(RegradeResult.id)
            .where(RegradeResult.status == "queued", RegradeResult.set_id.in_(grading))
            .order_by(RegradeResult.id)
            .limit(limit)
        )
    )
