"""``/courses``: courses, their exercise sets, extensions and rosters.

Who may do what is decided in ``server.courses.service`` (read: members; change: the
course's instructors; admins: everything). A course the caller is not in answers 404.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request, status
from fastapi.concurrency import run_in_threadpool

from server.courses import service, sets, windows
from server.courses.schemas import (
    CourseCreate,
    CourseExercises,
    CoursePublic,
    ExerciseWindow,
    ExtensionIn,
    ExtensionPublic,
    SetEntryIn,
    Unpublished,
)
from server.deps import CurrentUser, InstructorUser, Now, SessionDep, SettingsDep
from server.errors import InvalidRoster, SourceTooLarge
from server.models import Course
from server.openapi import errors
from server.users import service as users_service
from server.users.router import ROSTER_MAX_BYTES, roster_report
from server.users.schemas import RosterReport

router = APIRouter(prefix="/courses", tags=["courses"])

CourseSlug = Annotated[str, Path(max_length=64, description="Course slug.")]
ExerciseSlug = Annotated[str, Path(max_length=64, description="Exercise slug.")]


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
    instructor: InstructorUser,
    session: SessionDep,
    now: Now,
) -> ExerciseWindow:
    """Publish a catalogue exercise in the course with its release, due and close dates,
    late penalty and attempt limit (or replace them). 404 ``ExerciseNotFound`` for an
    unknown exercise; 422 ``InvalidCourse`` for dates out of order."""
    where = service.taught_course(session, instructor, course)
    sets.publish(
        session,
        where,
        exercise,
        release_at=service.read_time(payload.release_at, where),
        due_at=service.read_time(payload.due_at, where),
        close_at=service.read_time(payload.close_at, where),
        penalty_percent=payload.penalty_percent,
        penalty_unit=payload.penalty_unit,
        max_attempts=payload.max_attempts,
        feedback_policy=payload.feedback_policy,
        actor=instructor.name,
    )
    session.commit()
    item = next(i for i in sets.listing(session, where, instructor, now) if i.exercise == exercise)
    return windows.window(item, where, now)


@router.delete(
    "/{course}/exercises/{exercise}",
    response_model=Unpublished,
    responses=errors(401, 403, 404, notes={404: "`CourseNotFound`, or `ExerciseNotFound`: not in the set"}),
)
def unpublish_exercise(
    course: CourseSlug, exercise: ExerciseSlug, instructor: InstructorUser, session: SessionDep
) -> Unpublished:
    """Take an exercise out of the course's set; its submissions and scores are kept."""
    where = service.taught_course(session, instructor, course)
    sets.unpublish(session, where, exercise, actor=instructor.name)
    session.commit()
    return Unpublished(course=where.slug, exercise=exercise)


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
    user: Annotated[str, Path(max_length=64, description="The learner's login name.")],
    exercise: ExerciseSlug,
    payload: ExtensionIn,
    instructor: InstructorUser,
    session: SessionDep,
) -> ExtensionPublic:
    """Give one learner a later due date on one exercise (it moves an earlier hard close
    to that date for them too). 404 ``UserNotFound`` if they are not a learner of the course;
    422 ``InvalidCourse`` if the exercise has no due date or the new one is not later."""
    where = service.taught_course(session, instructor, course)
    due_at = service.read_time(payload.due_at, where)
    assert due_at is not None
    granted = sets.grant_extension(session, where, user, exercise, due_at, actor=instructor.name)
    session.commit()
    return ExtensionPublic(
        course=where.slug,
        user=user,
        exercise=exercise,
        due_at=service.local(granted.extension.due_at, where),  # type: ignore[arg-type]
        recomputed=granted.recomputed,
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
