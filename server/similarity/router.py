"""``/courses/{course}/similarity``: which learners of a course handed in the same code.

For the course's instructors (and admins) only: a learner of the course gets 403, anyone
else 404 (``server.courses.service.taught_course``). Nothing here changes a score.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, status

from server.courses.service import taught_course
from server.deps import InstructorUser, Now, SessionDep, StateDep
from server.errors import SubmissionNotFound
from server.models import ReviewMark
from server.openapi import errors
from server.similarity import service
from server.similarity.schemas import PairDetail, ReviewIn, ReviewPublic, RunPublic, SimilarityReport
from server.similarity.views import pair_public, run_public, side_by_side

router = APIRouter(prefix="/courses/{course}/similarity", tags=["similarity"])

CourseSlug = Annotated[str, Path(max_length=64, description="Course slug.")]
LearnerName = Annotated[str, Path(max_length=64, description="A learner's login name.")]
_NOT_YOURS = {403: "`NotAllowed`: a learner of this course", 404: "`CourseNotFound`: no such course, or not yours"}


@router.post(
    "",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=RunPublic,
    responses=errors(401, 403, 404, notes=_NOT_YOURS),
)
def request_run(
    course: CourseSlug, instructor: InstructorUser, session: SessionDep, state: StateDep, now: Now
) -> RunPublic:
    """Compute the course's similarity in the background (a run already waiting is returned
    instead of a second one). Read the result with ``GET``."""
    where = taught_course(session, instructor, course)
    queue = state.similarity
    run, new = service.request_run(
        session, where, requested_by=instructor, now=now, defer=queue.defer if queue is not None else service.no_defer
    )
    session.commit()
    if new and queue is not None:
        queue.enqueue(run.id)
    public = run_public(run)
    assert public is not None
    return public


@router.get(
    "",
    response_model=SimilarityReport,
    responses=errors(401, 403, 404, 422, notes={**_NOT_YOURS, 422: "`InvalidCourse`: not an exercise of the run"}),
)
def report(
    course: CourseSlug,
    instructor: InstructorUser,
    session: SessionDep,
    exercise: Annotated[str | None, Query(max_length=64, description="Rank by this exercise alone.")] = None,
    limit: Annotated[int, Query(ge=1, le=service.MAX_STORED_PAIRS)] = 20,
) -> SimilarityReport:
    """The ranked pairs of the newest finished run (over the course, or one exercise), with
    each pair's review mark, and the state of the newest run."""
    where = taught_course(session, instructor, course)
    latest, pairs_run = service.newest_runs(session, where)
    pairs = [] if pairs_run is None else service.ranked_pairs(session, pairs_run, exercise, limit)
    return SimilarityReport(
        course=where.slug,
        time_zone=where.time_zone,
        exercise=exercise,
        latest=run_public(latest),
        pairs_run=run_public(pairs_run),
        pairs=[pair_public(p) for p in pairs],
    )


@router.get(
    "/{a}/{b}",
    response_model=PairDetail,
    responses=errors(
        401,
        403,
        404,
        notes={
            **_NOT_YOURS,
            404: "`CourseNotFound`, `UserNotFound`, or `SubmissionNotFound`: the newest run did not keep this pair",
        },
    ),
)
def pair_detail(
    course: CourseSlug, a: LearnerName, b: LearnerName, instructor: InstructorUser, session: SessionDep
) -> PairDetail:
    """One pair of the newest finished run: per exercise, both sources and the matching lines."""
    where = taught_course(session, instructor, course)
    first, second = service.ordered(session, where, a, b)
    run = service.latest_done_run(session, where)
    stored = None if run is None else service.stored_pair(session, run, first, second)
    if run is None or stored is None:
        raise SubmissionNotFound(
            f"The newest similarity run of {where.slug!r} kept no pair {first.name} / {second.name}."
        )
    ranked = next(p for p in service.ranked_pairs(session, run) if p.pair.id == stored.id)
    return PairDetail(pair=pair_public(ranked), side_by_side=side_by_side(session, stored))


@router.put(
    "/{a}/{b}/review",
    response_model=ReviewPublic,
    responses=errors(401, 403, 404, 422, notes={**_NOT_YOURS, 404: "`CourseNotFound` or `UserNotFound`"}),
)
def review(
    course: CourseSlug,
    a: LearnerName,
    b: LearnerName,
    payload: ReviewIn,
    instructor: InstructorUser,
    session: SessionDep,
) -> ReviewPublic:
    """Mark a pair "reviewed: fine" or "reviewed: concern" (it stays across runs; nothing
    is shown to the learners and no score changes)."""
    where = taught_course(session, instructor, course)
    first, second = service.ordered(session, where, a, b)
    row = service.review(session, where, first, second, ReviewMark(payload.mark), instructor)
    session.commit()
    return ReviewPublic(
        course=where.slug,
        learner_a=first.name,
        learner_b=second.name,
        mark=payload.mark,  # what was just stored (ReviewMark(payload.mark) above)
        reviewed_at=row.reviewed_at,
    )
