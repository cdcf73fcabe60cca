"""``/courses``: courses, their exercise sets, extensions and rosters.

Who may do what is decided in ``server.courses.service`` (read: members; change: the
course's staff, instructors and TAs; admins: everything). A course the caller is not in answers 404.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, status
from fastapi.concurrency import run_in_threadpool
from sqlalchemy.orm import Session

from server.courses import service, sets, staff, windows
from server.courses.schemas import (
    CourseCreate,
    CourseExercises,
    CoursePublic,
    CourseSet,
    ExerciseWindow,
    ExtensionIn,
    ExtensionPublic,
    RepricingPublic,
    ScoresReleasedPublic,
    SetEntryIn,
    StaffAddedPublic,
    StaffIn,
    StaffRemovedPublic,
    Unpublished,
)
from server.db import rolled_back
from server.deps import CurrentUser, InstructorUser, Now, SessionDep, SettingsDep
from server.errors import InvalidRoster, SourceTooLarge
from server.models import Course, User
from server.openapi import errors
from server.users import service as users_service
from server.users.router import ROSTER_MAX_BYTES, roster_report
from server.users.schemas import RosterReport

router = APIRouter(prefix="/courses", tags=["courses"])

CourseSlug = Annotated[str, Path(max_length=64, description="Course slug.")]
ExerciseSlug = Annotated[str, Path(max_length=64, description="Exercise slug.")]
LearnerName = Annotated[str, Path(max_length=64, description="The learner's login name.")]
StaffName = Annotated[str, Path(max_length=64, description="The staff member's login name.")]


def _public(course: Course, role: str) -> CoursePublic:
    return CoursePublic(slug=course.slug, title=course.title, time_zone=course.time_zone, role=role)  # type: ignore[arg-type]


@router.get("", response_model=list[CoursePublic], responses=errors(401))
def list_courses(user: CurrentUser, session: SessionDep) -> list[CoursePublic]:
    """The caller's courses with their role (admins: every course)."""
    return [_public(c, role) for c, role in service.courses_of(session, user)]


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=CoursePublic,
    responses=errors(
        401,
        403,
        409,
        422,
        notes={409: "`CourseAlreadyExists`", 422: "`ValidationError` or `InvalidCourse` (slug, time zone)"},
    ),
)
def create_course(payload: CourseCreate, instructor: InstructorUser, session: SessionDep) -> CoursePublic:
    """Create a course (instructors and admins); its creator becomes its instructor.
    409 ``CourseAlreadyExists``; 422 ``InvalidCourse`` for a bad slug or time zone."""
    course = service.create_course(session, payload.slug, payload.title, payload.time_zone, instructor)
    session.commit()
    return _public(course, service.INSTRUCTOR)


@router.get(
    "/{course}/exercises",
    response_model=CourseExercises,
    responses=errors(401, 404, notes={404: "`CourseNotFound`: no such course, or not yours"}),
)
def course_exercises(course: CourseSlug, user: CurrentUser, session: SessionDep, now: Now) -> CourseExercises:
    """What is open in the course now: dates in its zone, time left, the caller's attempts.
    Learners do not see exercises before their release."""
    where = service.readable_course(session, user, course)
    return CourseExercises(
        course=where.slug,
        title=where.title,
        time_zone=where.time_zone,
        now=service.local(now, where),  # type: ignore[arg-type]
        exercises=windows.exercise_windows(session, where, user, now),
    )


@router.put(
    "/{course}/exercises/{exercise}",
    response_model=ExerciseWindow,
    responses=errors(
        401,
        403,
        404,
        422,
        notes={
            403: "`NotAllowed`: not an instructor of this course",
            404: "`CourseNotFound` or `ExerciseNotFound`",
            422: "`ValidationError` or `InvalidCourse` (dates out of order)",
        },
    ),
)
def publish_exercise(
    course: CourseSlug,
    exercise: ExerciseSlug,
    payload: SetEntryIn,
    staff: CurrentUser,
    session: SessionDep,
    now: Now,
) -> ExerciseWindow:
    """Publish a catalogue exercise in the course with its release, due and close dates,
    late penalty, attempt limit, feedback policy and served version (or replace them); the
    course's staff (instructors and TAs). 404 ``ExerciseNotFound`` for an unknown exercise;
    422 ``InvalidCourse`` for dates out of order."""
    where = service.taught_course(session, staff, course)
    sets.publish(session, where, exercise, **_set_rules(payload, where), actor=staff.name)
    session.commit()
    item = next(i for i in sets.listing(session, where, staff, now) if i.exercise == exercise)
    return windows.window(item, where, now)


def _set_rules(payload: SetEntryIn, where: Course) -> dict[str, Any]:
    """The keyword arguments of ``sets.publish`` and ``sets.preview`` a request gives, its times in UTC."""
    return {
        "release_at": service.read_time(payload.release_at, where),
        "due_at": service.read_time(payload.due_at, where),
        "close_at": service.read_time(payload.close_at, where),
        "penalty_percent": payload.penalty_percent,
        "penalty_unit": payload.penalty_unit,
        "max_attempts": payload.max_attempts,
        "feedback_policy": payload.feedback_policy,
        "version": payload.version,
    }


@router.post(
    "/{course}/exercises/{exercise}/preview",
    response_model=RepricingPublic,
    responses=errors(401, 403, 404, 409, 422, notes={404: "`CourseNotFound` or `ExerciseNotFound`"}),
)
def preview_publish(
    course: CourseSlug, exercise: ExerciseSlug, payload: SetEntryIn, staff: CurrentUser, session: SessionDep
) -> RepricingPublic:
    """The dry run of ``PUT`` on the same path: the same refusals, then how many submissions so
    far the new rules would re-price (``counted``: whose score that counts would change), as the
    assignments page asks before it applies. Nothing is written (a POST still: a read-only token
    may not)."""
    where = service.taught_course(session, staff, course)
    priced = sets.preview(session, where, exercise, **_set_rules(payload, where))
    return RepricingPublic(course=where.slug, exercise=exercise, rewritten=priced.rewritten, counted=priced.counted)


@router.get(
    "/{course}/sets",
    response_model=CourseSet,
    responses=errors(401, 403, 404, notes={403: "`NotAllowed`: not staff of this course"}),
)
def course_set(course: CourseSlug, staff: CurrentUser, session: SessionDep) -> CourseSet:
    """The course's set as its staff published it (dates, late rule, attempts, feedback policy,
    pinned version), for the course's instructors and TAs."""
    return sets.course_set(session, service.taught_course(session, staff, course))


@router.delete(
    "/{course}/exercises/{exercise}",
    response_model=Unpublished,
    responses=errors(401, 403, 404, notes={404: "`CourseNotFound`, or `ExerciseNotFound`: not in the set"}),
)
def unpublish_exercise(
    course: CourseSlug,
    exercise: ExerciseSlug,
    staff: CurrentUser,
    session: SessionDep,
    dry_run: Annotated[bool, Query(description="Only check it could be taken out; nothing is written.")] = False,
) -> Unpublished:
    """Take an exercise out of the course's set; its submissions and scores are kept. The
    course's staff (instructors and TAs, as on the assignments page). ``dry_run``: the same
    refusals, nothing written (a DELETE still: a read-only token may not)."""
    where = service.taught_course(session, staff, course)
    if dry_run:
        with rolled_back(session):
            sets.unpublish(session, where, exercise, actor=staff.name)
    else:
        sets.unpublish(session, where, exercise, actor=staff.name)
        session.commit()
    return Unpublished(course=where.slug, exercise=exercise)


def _release(
    course: str, exercise: str, staff: User, session: Session, *, hold: bool, dry_run: bool
) -> ScoresReleasedPublic:
    """``sets.release_scores`` for the course's staff (instructors and TAs); in a dry run, rolled back."""
    where = service.taught_course(session, staff, course)
    with rolled_back(session) if dry_run else nullcontext():
        done = sets.release_scores(session, where, exercise, hold=hold, actor=staff.name)
        answer = ScoresReleasedPublic(
            course=where.slug,
            exercise=exercise,
            held=hold,
            feedback_policy=done.entry.feedback_policy,
            submissions=done.submissions,
        )
    if not dry_run:
        session.commit()
    return answer


_RELEASE_ERRORS = errors(
    401,
    403,
    404,
    422,
    notes={
        403: "`NotAllowed`: not staff of this course (or a read-only token)",
        404: "`CourseNotFound`, or `ExerciseNotFound`: not in the set",
        422: "`InvalidCourse`: released or held already, or a hold with no due date",
    },
)
#: ``?dry_run=true`` of a release or a hold.
ReleaseDryRun = Annotated[bool, Query(description="Only check and say what it would do; nothing is written.")]


@router.post("/{course}/exercises/{exercise}/release", response_model=ScoresReleasedPublic, responses=_RELEASE_ERRORS)
def release_scores(
    course: CourseSlug, exercise: ExerciseSlug, staff: CurrentUser, session: SessionDep, dry_run: ReleaseDryRun = False
) -> ScoresReleasedPublic:
    """Release the exercise's held-back scores now (its feedback policy becomes ``full``), as the
    assignments page's "Release hidden scores now" does; the course's staff (instructors and
    TAs). 422 ``InvalidCourse`` when they are not held back. ``dry_run``: the same refusals and
    the count, nothing written (a POST still: a read-only token may not)."""
    return _release(course, exercise, staff, session, hold=False, dry_run=dry_run)


@router.post("/{course}/exercises/{exercise}/hold", response_model=ScoresReleasedPublic, responses=_RELEASE_ERRORS)
def hold_scores(
    course: CourseSlug, exercise: ExerciseSlug, staff: CurrentUser, session: SessionDep, dry_run: ReleaseDryRun = False
) -> ScoresReleasedPublic:
    """Hold the exercise's scores again until each learner's due date (``hidden-until-due``,
    which needs a due date); the course's staff. 422 ``InvalidCourse`` when they are held
    already or there is no due date. ``dry_run``: the same refusals, nothing written."""
    return _release(course, exercise, staff, session, hold=True, dry_run=dry_run)


@router.put(
    "/{course}/extensions/{user}/{exercise}",
    response_model=ExtensionPublic,
    responses=errors(
        401,
        403,
        404,
        422,
        notes={
            404: "`CourseNotFound`, or `UserNotFound`: not a learner of the course",
            422: "`ValidationError` or `InvalidCourse`: no due date to extend, or not later than it",
        },
    ),
)
def grant_extension(
    course: CourseSlug,
    user: LearnerName,
    exercise: ExerciseSlug,
    payload: ExtensionIn,
    staff: CurrentUser,
    session: SessionDep,
    dry_run: Annotated[
        bool, Query(description="Only say how many submissions it would re-price; nothing is written.")
    ] = False,
) -> ExtensionPublic:
    """Give one learner a later due date on one exercise (it moves an earlier hard close
    to that date for them too); the course's staff (instructors and TAs). 404 ``UserNotFound``
    if they are not a learner of the course; 422 ``InvalidCourse`` if the exercise has no due
    date or the new one is not later. ``dry_run``: the same refusals and the count, nothing
    written (a PUT still: a read-only token may not)."""
    where = service.taught_course(session, staff, course)
    due_at = service.read_time(payload.due_at, where)
    assert due_at is not None
    if dry_run:
        count = sets.preview_extension(session, where, user, exercise, due_at)
    else:
        count = sets.grant_extension(
            session, where, user, exercise, due_at, actor=staff.name, reason=payload.reason
        ).recomputed
        session.commit()
    return ExtensionPublic(
        course=where.slug,
        user=user,
        exercise=exercise,
        due_at=service.local(due_at, where),  # type: ignore[arg-type]
        recomputed=count,
        time_zone=where.time_zone,
    )


@router.post(
    "/{course}/staff",
    response_model=StaffAddedPublic,
    responses=errors(
        401,
        403,
        404,
        409,
        422,
        notes={
            403: "`NotAllowed`: not an instructor of this course (a TA may not change staff)",
            409: "`UserAlreadyExists`: the login is an account an LMS made",
            422: "`ValidationError`, `InvalidUser` (a bad login) or `InvalidCourse` (the default course)",
        },
    ),
)
def add_course_staff(
    course: CourseSlug,
    payload: StaffIn,
    instructor: InstructorUser,
    session: SessionDep,
    settings: SettingsDep,
    dry_run: Annotated[bool, Query(description="Only check and say what it would do; nothing is written.")] = False,
) -> StaffAddedPublic:
    """Make a login a TA or an instructor of the course (``server.courses.staff``); its
    instructors only, never its TAs (learner accounts). The account is created when there is
    none, its token in the answer once. ``dry_run``: the same refusals, no token, nothing
    written (a POST still: a read-only token may not)."""
    where = service.taught_course(session, instructor, course)
    if dry_run:
        with rolled_back(session):
            added = staff.add_staff(
                session, where, payload.name, payload.role, settings.secret_bytes, actor=instructor.name
            )
            return _staff_added(where, payload, added, shown=False)
    added = staff.add_staff(session, where, payload.name, payload.role, settings.secret_bytes, actor=instructor.name)
    session.commit()
    return _staff_added(where, payload, added, shown=True)


@router.delete(
    "/{course}/staff/{user}",
    response_model=StaffRemovedPublic,
    responses=errors(
        401,
        403,
        404,
        422,
        notes={
            403: "`NotAllowed`: not an instructor of this course (a TA may not change staff)",
            404: "`CourseNotFound`, or `UserNotFound`: not staff of the course",
            422: "`InvalidCourse`: the default course, or the course's last instructor",
        },
    ),
)
def remove_course_staff(
    course: CourseSlug,
    user: StaffName,
    instructor: InstructorUser,
    session: SessionDep,
    dry_run: Annotated[bool, Query(description="Only check and say what it would do; nothing is written.")] = False,
) -> StaffRemovedPublic:
    """Take a TA or an instructor off the course's staff (``server.courses.staff.remove_staff``:
    their account, submissions and past actions stay; the last instructor stays); its
    instructors only, never its TAs. ``dry_run``: the same refusals, nothing written (a DELETE
    still: a read-only token may not)."""
    where = service.taught_course(session, instructor, course)
    with rolled_back(session) if dry_run else nullcontext():
        removed = staff.remove_staff(session, where, user, actor=instructor.name)
        answer = StaffRemovedPublic(course=where.slug, name=removed.user.name, role=removed.role)
    if not dry_run:
        session.commit()
    return answer


def _staff_added(course: Course, payload: StaffIn, added: staff.StaffAdded, *, shown: bool) -> StaffAddedPublic:
    return StaffAddedPublic(
        course=course.slug,
        name=added.user.name,
        role=payload.role,
        token=added.token if shown else None,
        created=added.token is not None,
        account_raised=added.account_raised,
    )


@router.post(
    "/{course}/roster",
    response_model=RosterReport,
    responses=errors(
        401,
        403,
        404,
        413,
        422,
        notes={
            404: "`CourseNotFound`: no such course, or not yours",
            422: "`InvalidRoster`: no `name` column, not UTF-8 or not CSV",
        },
    ),
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"text/csv": {"schema": {"type": "string", "example": "name,display_name\nalice,Alice A.\n"}}},
        }
    },
)
async def import_course_roster(
    course: CourseSlug, request: Request, instructor: InstructorUser, session: SessionDep, settings: SettingsDep
) -> RosterReport:
    """Enroll a CSV roster (``name,display_name[,role][,course]``) in this course (or in each
    row's ``course``): new users are created (their token is in the answer, once), existing
    ones are enrolled. Per-line problems are reported, never fatal."""
    body = await request.body()
    if len(body) > ROSTER_MAX_BYTES:
        raise SourceTooLarge(f"The roster is over {ROSTER_MAX_BYTES} bytes.")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidRoster("The roster is not UTF-8 text.") from None

    def enroll_all() -> list[users_service.RosterOutcome]:
        service.taught_course(session, instructor, course)  # 404/403 before any row
        enroller = service.roster_enroller(session, instructor, course)
        outcomes = users_service.import_roster(session, text, settings.secret_bytes, instructor, enroller)
        session.commit()
        return outcomes

    return roster_report(await run_in_threadpool(enroll_all))
