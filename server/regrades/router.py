"""``/regrades``: preview, diff, apply, cancel. Instructors and admins only (a learner gets 403;
an instructor sees only the sets of courses they teach, others answer 404)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, status

from server.courses.service import taught_course, taught_course_ids
from server.db import rolled_back
from server.deps import InstructorUser, SessionDep, StateDep
from server.models import Keep, Role
from server.openapi import errors
from server.regrades import service
from server.regrades.apply import apply_set
from server.regrades.schemas import RegradeApply, RegradeCreate, RegradeDiff, RegradePublic, StalePublic
from server.regrades.views import diff_public, regrade_public
from server.text_guard import is_storable_text
from server.users.service import managed_user

router = APIRouter(prefix="/regrades", tags=["regrades"])

RegradeId = Annotated[int, Path(ge=1, le=2**31 - 1, description="Regrade set id.")]


@router.post(
    "",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=RegradePublic,
    responses=errors(401, 403, 404, 409, 422, notes={409: "`ExerciseNotVerified`: no verified version to grade with"}),
)
def preview(payload: RegradeCreate, instructor: InstructorUser, session: SessionDep, state: StateDep) -> RegradePublic:
    """Grade the chosen stored submissions again into a new set, behind live submissions.
    Nothing learners see changes until the set is applied."""
    course = None
    if payload.course is not None or Role(instructor.role) is not Role.ADMIN:
        course = taught_course(session, instructor, payload.course)
    regrade, ids = service.create_preview(
        session,
        exercise=payload.exercise,
        course=course,
        learner=managed_user(session, None, payload.learner) if payload.learner else None,
        submission_id=payload.submission,
        all_versions=payload.all_versions,
        requested_by=instructor,
        defer=state.queue.defer_regrade,
    )
    session.commit()
    state.queue.enqueue_regrades(ids)
    return regrade_public(session, regrade)


@router.get("", response_model=list[RegradePublic], responses=errors(401, 403))
def list_regrades(instructor: InstructorUser, session: SessionDep) -> list[RegradePublic]:
    """The newest sets you may read."""
    return [regrade_public(session, r) for r in service.list_sets(session, instructor)]


@router.get("/stale", response_model=list[StalePublic], responses=errors(401, 403))
def stale(
    instructor: InstructorUser,
    session: SessionDep,
    exercise: Annotated[str | None, Query(max_length=64, description="Only this exercise.")] = None,
) -> list[StalePublic]:
    """Counted verdicts per course and exercise that come from an older exercise or grader
    version, in the courses you teach (admins: every course), as ``ppo-grader regrade status``
    prints them."""
    if exercise is not None and not is_storable_text(exercise):
        return []  # no exercise is called that (PostgreSQL refuses a NUL or a lone surrogate in a query)
    return [line.public() for line in service.stale_lines(session, taught_course_ids(session, instructor), exercise)]


@router.get("/{regrade_id}", response_model=RegradeDiff, responses=errors(401, 403, 404))
def show(
    regrade_id: RegradeId,
    instructor: InstructorUser,
    session: SessionDep,
    keep: Annotated[Keep, Query(description="Diff as an apply with this rule would leave it.")] = Keep.NEW,
) -> RegradeDiff:
    """The set and its diff against the verdicts learners see now."""
    regrade = service.readable_set(session, regrade_id, instructor)
    session.commit()
    return diff_public(session, regrade, keep)


#: ``?dry_run=true`` of an apply or a cancel.
DryRun = Annotated[bool, Query(description="Only check it and answer what it would do; nothing is written.")]


@router.post("/{regrade_id}/apply", response_model=RegradeDiff, responses=errors(401, 403, 404, 409))
def apply(
    regrade_id: RegradeId,
    payload: RegradeApply,
    instructor: InstructorUser,
    session: SessionDep,
    dry_run: DryRun = False,
) -> RegradeDiff:
    """Make a ready set live in one transaction (refused twice, and while grading). ``dry_run``:
    the same refusals and the diff it would apply (``replaced``: would replace), nothing written
    (a POST still: a read-only token may not)."""
    regrade = service.readable_set(session, regrade_id, instructor)
    if dry_run:
        with rolled_back(session):
            diff = apply_set(session, regrade, keep=payload.keep, reason=payload.reason, actor=instructor.name)
        return diff_public(session, regrade, payload.keep, diff)
    diff = apply_set(session, regrade, keep=payload.keep, reason=payload.reason, actor=instructor.name)
    session.commit()
    return diff_public(session, regrade, payload.keep, diff)


@router.post("/{regrade_id}/cancel", response_model=RegradePublic, responses=errors(401, 403, 404, 409))
def cancel(
    regrade_id: RegradeId, instructor: InstructorUser, session: SessionDep, dry_run: DryRun = False
) -> RegradePublic:
    """Drop a set that was not applied; nothing learners see changes. ``dry_run``: the same
    refusals, nothing written."""
    regrade = service.readable_set(session, regrade_id, instructor)
    if dry_run:
        with rolled_back(session):
            service.cancel(session, regrade, actor=instructor.name)
        return regrade_public(session, regrade)
    service.cancel(session, regrade, actor=instructor.name)
    session.commit()
    return regrade_public(session, regrade)
