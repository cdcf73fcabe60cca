"""Courses and membership: create, find, who may read or teach which, enrollment, rosters.

Access (the one place it is decided):
- an admin reads and teaches every course;
- the default course is every instructor's to teach, and every learner's who is enrolled
  in no other course (so an upgraded server behaves as before until a course is made, and
  a learner moved into a course leaves the default course's boards), unless an LMS made
  the account: an LMS's accounts are in the courses it puts them in and no other (a TA it
  drops from their only course, ``server.lti.accounts.drop_member``, is in none);
- any other course is read by its enrolled members and taught by its enrolled instructors.
A course the caller may not read answers 404 ``CourseNotFound``, so slugs do not leak.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.db import insert_unless_taken
from server.errors import CourseAlreadyExists, CourseNotFound, CourseRequired, InvalidCourse, NotAllowed
from server.models import DEFAULT_COURSE_ID, Course, Enrollment, LtiUser, Role, User
from server.text_guard import is_storable_text
from server.times import zoned_time

SLUG_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
LEARNER, INSTRUCTOR = "learner", "instructor"


def zone(name: str) -> ZoneInfo:
    """The ``zoneinfo`` zone called ``name``; 422 ``InvalidCourse`` for an unknown one."""
    try:
        if len(name) > 64:
            raise ValueError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InvalidCourse(f"Unknown time zone {name!r}; use an IANA name such as 'Europe/Paris' or 'UTC'.") from None


def local(moment: datetime | None, course: Course) -> datetime | None:
    """``moment`` (UTC) in the course's time zone, for the wire."""
    return None if moment is None else moment.astimezone(zone(course.time_zone))


def read_time(moment: datetime | None, course: Course) -> datetime | None:
    """A time sent by an instructor, in UTC: without an offset it is read in the course's zone."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone(course.time_zone))
    return moment.astimezone(UTC)


def course_time(moment: datetime, course: Course) -> str:
    """``moment`` as a learner reads it in messages: ``2026-12-04 17:00:00 CET (Europe/Paris)``."""
    return zoned_time(moment, course.time_zone)


def create_course(
    session: Session, slug: str, title: str, time_zone: str = "UTC", instructor: User | None = None
) -> Course:
    """Create a course; ``instructor`` (unless an admin) is enrolled as its instructor. The caller commits."""
    if not SLUG_PATTERN.match(slug):
        raise InvalidCourse(f"Course slugs are 1-64 characters of a-z, 0-9, '.', '_' or '-'; got {slug!r}.")
    zone(time_zone)
    if len(title) > 200:
        raise InvalidCourse("A course title is at most 200 characters.")
    course = claim_course(session, slug, title, time_zone)
    if course is None:
        raise CourseAlreadyExists(f"A course called {slug!r} exists already.")
    if instructor is not None and Role(instructor.role) is not Role.ADMIN:
        enroll(session, course, instructor, INSTRUCTOR)
    return course


def claim_course(session: Session, slug: str, title: str, time_zone: str = "UTC") -> Course | None:
    """A new course called ``slug`` (valid: the caller checked), or None when the slug is taken,
    also by a concurrent request that has not committed yet (``server.db.insert_unless_taken``:
    two requests cannot both get it, and the loser's transaction stays usable). The caller commits."""
    course_id = insert_unless_taken(session, Course, {"slug": slug, "title": title or slug, "time_zone": time_zone})
    return None if course_id is None else session.get(Course, course_id)


def find_course(session: Session, slug: str) -> Course:
    """The course called ``slug`` (no access check: the CLI's view); 404 otherwise."""
    # A slug holding a NUL or a lone surrogate names no course (PostgreSQL refuses it in a query).
    course = session.scalar(select(Course).where(Course.slug == slug)) if is_storable_text(slug) else None
    if course is None:
        raise CourseNotFound(f"No course called {slug!r}.")
    return course


def course_role(session: Session, user: User, course: Course) -> str | None:
    """``learner``, ``instructor`` or None (not in the course), as the access rules say."""
    if Role(user.role) is Role.ADMIN:
        return INSTRUCTOR
    if course.id == DEFAULT_COURSE_ID:
        if Role(user.role).reads_everything:
            return INSTRUCTOR
        return LEARNER if _in_default_course(session, user.id) else None
    return session.scalar(
        select(Enrollment.role).where(Enrollment.course_id == course.id, Enrollment.user_id == user.id)
    )


def _in_default_course(session: Session, user_id: int) -> bool:
    """Whether a learner account is in the default course: enrolled nowhere, made by no LMS."""
    enrolled = session.scalar(select(Enrollment.course_id).where(Enrollment.user_id == user_id).limit(1))
    return enrolled is None and not _made_by_lms(session, user_id)


def _made_by_lms(session: Session, user_id: int) -> bool:
    return session.scalar(select(LtiUser.user_id).where(LtiUser.user_id == user_id).limit(1)) is not None


def readable_course(session: Session, user: User, slug: str | None) -> Course:
    """The course a member may read (None: the default course); 404 for anyone else."""
    course = (
        session.get(Course, DEFAULT_COURSE_ID)
        if slug is None
        else session.scalar(select(Course).where(Course.slug == slug))
        if is_storable_text(slug)
        else None  # no course is called that, and PostgreSQL refuses it in a query
    )
    if course is None or course_role(session, user, course) is None:
        raise CourseNotFound(f"No course called {slug!r} that you belong to.")
    return course


def taught_course(session: Session, user: User, slug: str | None) -> Course:
    """The course if ``user`` teaches it (None: the default course); 403 for its learners, 404 for others."""
    course = readable_course(session, user, slug)
    if course_role(session, user, course) != INSTRUCTOR:
        raise NotAllowed(f"Only the instructors of {course.slug!r} may do this.")
    return course


def courses_of(session: Session, user: User) -> list[tuple[Course, str]]:
    """(course, role) pairs the user belongs to, by slug. Learners enrolled nowhere (and made
    by no LMS) are in the default course; instructors always see it; admins see every course."""
    if Role(user.role) is Role.ADMIN:
        return [(c, INSTRUCTOR) for c in session.scalars(select(Course).order_by(Course.slug))]
    enrolled = list(
        session.execute(
            select(Course, Enrollment.role)
            .join(Enrollment, Enrollment.course_id == Course.id)
            .where(Enrollment.user_id == user.id, Course.id != DEFAULT_COURSE_ID)
        ).tuples()
    )
    default = session.get(Course, DEFAULT_COURSE_ID)
    if default is not None and (not enrolled or Role(user.role).reads_everything):
        role = course_role(session, user, default)
        if role is not None:
            enrolled.append((default, role))
    return sorted(enrolled, key=lambda pair: pair[0].slug)


def taught_course_ids(session: Session, user: User) -> set[int] | None:
    """Ids of the courses ``user`` teaches (None: every course, for admins; empty for learners)."""
    role = Role(user.role)
    if role is Role.ADMIN:
        return None
    ids = set(
        session.scalars(
            select(Enrollment.course_id).where(Enrollment.user_id == user.id, Enrollment.role == INSTRUCTOR)
        )
    )
    if role.reads_everything:
        ids.add(DEFAULT_COURSE_ID)
    return ids


def teaches_course(session: Session, user: User, course_id: int) -> bool:
    """Whether ``user`` teaches the course ``course_id``, so reads everything of it (admins:
    every course; :func:`taught_course_ids`)."""
    taught = taught_course_ids(session, user)
    return taught is None or course_id in taught


def default_course(session: Session) -> Course:
    """The default course: everything before courses existed, and the boards' default."""
    course = session.get(Course, DEFAULT_COURSE_ID)
    if course is None:  # the migrations create it; only a hand-damaged database lacks it
        raise CourseNotFound("The default course is missing; run the migrations (ppo-grader serve does).")
    return course


def taught_course_named(session: Session, user: User, slug: str) -> Course | None:
    """The course called ``slug`` if ``user`` teaches it (admins: any course); None otherwise,
    so a page answers the same for a course that does not exist and one taught by others.
    A slug holding a NUL or a lone surrogate names no course (PostgreSQL refuses it in a query):
    None as well, so every form naming a course answers it with the same 404."""
    if not is_storable_text(slug):
        return None
    course = session.scalar(select(Course).where(Course.slug == slug[:64]))
    if course is None:
        return None
    taught = taught_course_ids(session, user)
    return course if taught is None or course.id in taught else None


def may_read_learner(session: Session, reader: User, learner: User) -> bool:
    """Whether ``reader`` may read ``learner``'s pages: themselves, an admin, or an
    instructor of a course the learner is in (the default course: learners enrolled nowhere, made by no LMS)."""
    if reader.id == learner.id:
        return True
    taught = taught_course_ids(session, reader)
    if taught is None:
        return True
    mine = set(session.scalars(select(Enrollment.course_id).where(Enrollment.user_id == learner.id)))
    if not mine and Role(learner.role) is Role.LEARNER and not _made_by_lms(session, learner.id):
        mine = {DEFAULT_COURSE_ID}
    return bool(mine & taught)


def course_for_submission(session: Session, user: User, slug: str | None) -> Course:
    """The course a submission goes to: the named one (if the user is in it), else the
    user's only course; 422 ``CourseRequired`` when they are in several."""
    if slug is not None:
        return readable_course(session, user, slug)
    mine = [c for c, _role in courses_of(session, user)]
    if len(mine) == 1:
        return mine[0]
    if not mine:  # an LMS's account that the LMS dropped from every course it taught
        raise CourseNotFound("You are in no course; open ppo-grader from your LMS course.")
    default = [c for c in mine if c.id == DEFAULT_COURSE_ID]
    if Role(user.role).reads_everything and default:
        return default[0]  # an instructor trying an exercise out, as before courses
    names = ", ".join(c.slug for c in mine)
    raise CourseRequired(f"You are in several courses ({names}); say which one (ppo-submit --course NAME).")


def enroll(session: Session, course: Course, user: User, role: str = LEARNER) -> None:
    """Put ``user`` in ``course`` as ``role`` (learner or instructor), or change their role."""
    if role not in (LEARNER, INSTRUCTOR):
        raise InvalidCourse(f"Course roles are learner or instructor, not {role!r}.")
    if course.id == DEFAULT_COURSE_ID:
        return  # everyone is in it already
    existing = session.get(Enrollment, (course.id, user.id))
    if existing is None:
        # In one statement: two requests enrolling the same person at once (two tabs of a
        # first launch) cannot both insert; the loser then finds the row and sets its role.
        values = {"course_id": course.id, "user_id": user.id, "role": role}
        if insert_unless_taken(session, Enrollment, values) is not None:
            return
        existing = session.get(Enrollment, (course.id, user.id))
        assert existing is not None
    existing.role = role
    session.flush()


def course_role_for(role: Role) -> str:
    """The course role a roster row's account role gives: instructors and admins teach."""
    return LEARNER if role is Role.LEARNER else INSTRUCTOR


def members(session: Session, course: Course, role: str = LEARNER) -> list[User]:
    """The course's learners (or instructors), by name. The default course's learners are
    the learner accounts enrolled in no other course and made by no LMS."""
    return list(session.scalars(select(User).where(User.id.in_(member_ids_of(course.id, role))).order_by(User.name)))


def member_ids_of(course_id: int, role: str = LEARNER):  # type: ignore[no-untyped-def]
    """SQL: ids of a course's learners (ranked in its boards, statistics and gradebook) or instructors."""
    if course_id == DEFAULT_COURSE_ID:
        if role == INSTRUCTOR:
            return select(User.id).where(User.role == Role.INSTRUCTOR.value)
        return select(User.id).where(
            User.role == Role.LEARNER.value,
            User.id.not_in(select(Enrollment.user_id)),
            User.id.not_in(select(LtiUser.user_id)),  # an LMS's accounts: only in its courses
        )
    return select(Enrollment.user_id).where(Enrollment.course_id == course_id, Enrollment.role == role)


def roster_enroller(session: Session, actor: User | None, course_slug: str | None):  # type: ignore[no-untyped-def]
    """The ``enroll`` hook of ``server.users.service.import_roster``: each row goes to its
    ``course`` cell's course, or to ``course_slug``; ``actor`` must teach it (None: the CLI)."""
    cache: dict[str, Course] = {}

    def check(cell: str):  # type: ignore[no-untyped-def]
        slug = cell.lower() or course_slug
        if not slug:
            raise InvalidCourse("no course for this row: add a 'course' column or name a course for the import")
        if len(slug) > 64:
            raise InvalidCourse("course names are at most 64 characters")
        if slug not in cache:
            cache[slug] = find_course(session, slug) if actor is None else taught_course(session, actor, slug)
        course = cache[slug]

        def bind(user: User, role: Role) -> str:
            enroll(session, course, user, course_role_for(role))
            return course.slug

        return bind

    return check
