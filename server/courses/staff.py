"""A course's staff from the command line: adding a teaching assistant or an instructor to a
course (``ppo-grader courses staff add``) and taking one off it (``courses staff remove``:
:func:`remove_staff`, which keeps each course's last instructor), and whose name a correction made at a terminal
carries (``ppo-grader scores ... --by``).

- **Staff** of a course are its members with the course role ``instructor`` (admins teach
  every course; on the default course, instructor accounts do). A **TA** is staff of that
  course only: their account keeps its own role (a learner account stays one), so they gain
  the course's dashboard pages, its corrections and extensions and nothing anywhere else, as
  an LMS's TAs do (``server.lti.accounts``). An **instructor** added this way also gets an
  instructor account (an account that is already instructor or admin keeps its role), which
  the API's instructor routes (gradebooks, rosters) ask for.
- **Never an LMS's account.** An LMS names the accounts it makes after its users' usernames
  (``server.lti.accounts``), which the LMS, or its users, choose: a login the tool's staff hand
  out may be held by one already. Staff are added by login only to the tool's own accounts;
  a login an LMS's account holds is refused, naming the clash (docs/lti.md: nobody is made an
  instructor account, or staff of a course the LMS did not put them in, by an LMS).
- **From the course page** (``server.dashboard.staff``) an instructor of the course adds a TA
  by the login of an existing account (:func:`add_ta`, never creating one) and removes a TA
  (:func:`remove_ta`: their instructor enrollment ends; their past actions stay in the audit
  log, which keeps the login it was written with). Who may do it is :func:`may_change_staff`:
  an admin, or an instructor account that teaches the course. Enrollments have one staff role
  (``instructor``), so a course's TA is told from its instructor by the account: a TA's account
  is a learner account (an LMS's staff are learner accounts too, so they count as TAs here: an
  LMS course's staff are the LMS's to change).
- **Who made a correction** is a staff account of the course, never the operating system's
  user: ``--by NAME``, or else the owner of ``PPO_GRADER_TOKEN`` (the token a staff member's
  ``ppo-submit`` is logged in with, given to this shell). Without either the command is
  refused and names the course's staff to choose from: a learner reads the name beside their
  score, so it must be a person the course knows.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import delete
from sqlalchemy.orm import Session

from server.courses import audit
from server.courses.service import INSTRUCTOR, course_role, enroll, members
from server.errors import InvalidCourse, NotAllowed, UserAlreadyExists, UserNotFound
from server.models import AuditAction, Course, Enrollment, Role, User
from server.users.service import create_user, lms_clash, made_by_lms, managed_user, user_for_token

StaffRole = Literal["ta", "instructor"]
#: The environment variable that says who is at this terminal (the same one ``ppo-submit`` reads).
TOKEN_ENV = "PPO_GRADER_TOKEN"


@dataclass(frozen=True)
class StaffAdded:
    """What ``add_staff`` did: the account (with its token when it was created now)."""

    user: User
    role: StaffRole
    token: str | None
    account_raised: bool


def add_staff(
    session: Session, course: Course, name: str, role: StaffRole, pepper: bytes, *, actor: str = "unknown"
) -> StaffAdded:
    """Make ``name`` staff of ``course`` (a learner of it becomes staff); create the account
    when there is none (its token is returned, to show once). ``UserAlreadyExists`` when an LMS
    made the account of that login (:func:`tool_account`). ``actor`` (who did it) goes to the
    audit log. The caller commits."""
    if course.is_default:
        raise InvalidCourse(
            "The default course's staff are the instructor accounts: `ppo-grader users add NAME --role instructor`."
        )
    token = None
    try:
        user = tool_account(session, name)
    except UserNotFound:
        made = create_user(session, name, Role.INSTRUCTOR if role == "instructor" else Role.LEARNER, pepper)
        user, token = made.user, made.token
    raised = role == "instructor" and Role(user.role) is Role.LEARNER
    if raised:
        user.role = Role.INSTRUCTOR.value
    enroll(session, course, user, INSTRUCTOR)
    audit.record(
        session, course, actor, AuditAction.STAFF_ADD, user.name, role + (" (account created)" if token else "")
    )
    return StaffAdded(user, role, token, raised)


@dataclass(frozen=True)
class StaffRemoved:
    """What ``remove_staff`` did: whose staff enrollment ended, and what they were."""

    user: User
    role: StaffRole


def remove_staff(session: Session, course: Course, name: str, *, actor: str = "unknown") -> StaffRemoved:
    """End ``name``'s staff enrollment in ``course``, a TA's or an instructor's (their account
    keeps its role; their submissions and the audit log's rows of what they did stay).
    ``UserNotFound`` when ``name`` is not staff of the course; ``InvalidCourse`` for the default
    course and for the course's last instructor (a course keeps one who may change its staff).
    ``actor`` goes to the audit log. The caller commits."""
    if course.is_default:
        raise InvalidCourse("The default course's staff are the instructor accounts: nobody is taken off it as staff.")
    staff = staff_of(session, course)
    found = {u.name: (u, role) for u, role in staff}.get(name.strip()[:64])
    if found is None:
        raise UserNotFound(f"{name[:64]!r} is not staff of {course.slug!r}.")
    user, role = found
    if role == "instructor" and [r for _, r in staff].count("instructor") == 1:
        raise InvalidCourse(
            f"{user.name!r} is the last instructor of {course.slug!r}: add another one first "
            f"(`ppo-grader courses staff add {course.slug} NAME --role instructor`)."
        )
    _end_staff(session, course, user)
    audit.record(session, course, actor, AuditAction.STAFF_REMOVE, user.name, role)
    return StaffRemoved(user, role)


def _end_staff(session: Session, course: Course, user: User) -> None:
    session.execute(
        delete(Enrollment).where(
            Enrollment.course_id == course.id, Enrollment.user_id == user.id, Enrollment.role == INSTRUCTOR
        )
    )


def may_change_staff(session: Session, user: User, course: Course) -> bool:
    """Whether ``user`` may add and remove ``course``'s TAs: an admin, or an instructor (or
    admin) account that teaches it; a TA (a learner account teaching it) may not. Never on the
    default course, whose staff are the instructor accounts."""
    if course.is_default:
        return False
    if Role(user.role) is Role.ADMIN:
        return True
    return Role(user.role) is Role.INSTRUCTOR and course_role(session, user, course) == INSTRUCTOR


def staff_of(session: Session, course: Course) -> list[tuple[User, StaffRole]]:
    """The course's staff by login, each ``instructor`` or ``ta`` (:func:`may_change_staff`'s rule)."""
    return [(u, "ta" if Role(u.role) is Role.LEARNER else "instructor") for u in members(session, course, INSTRUCTOR)]


def _refuse_unless_staff_changer(session: Session, actor: User, course: Course) -> None:
    if course.is_default:
        raise InvalidCourse(
            "The default course's staff are the instructor accounts: `ppo-grader users add NAME --role instructor`."
        )
    if not may_change_staff(session, actor, course):
        raise NotAllowed(
            f"Only an instructor of {course.slug!r} may add or remove its TAs; a TA may do everything else "
            "on its pages. Ask one of its instructors."
        )


def add_ta(session: Session, course: Course, name: str, actor: User) -> User:
    """Make the existing tool account ``name`` a TA of ``course`` (a learner of it becomes
    staff); ``actor`` must be allowed (:func:`may_change_staff`, else ``NotAllowed``).
    ``UserNotFound`` when there is no such account (none is created here), ``UserAlreadyExists``
    for an account an LMS made, ``InvalidCourse`` for one that is staff already. The caller commits."""
    _refuse_unless_staff_changer(session, actor, course)
    user = tool_account(session, name.strip()[:64])
    if course_role(session, user, course) == INSTRUCTOR:
        raise InvalidCourse(f"{user.name!r} is staff of {course.slug!r} already.")
    if Role(user.role) is not Role.LEARNER:
        # An instructor account is an instructor wherever it teaches (staff_of): not a TA.
        raise InvalidCourse(
            f"{user.name!r} is an {user.role} account, so it would be an instructor of {course.slug!r}, not a TA; "
            f"add instructors at the terminal (`ppo-grader courses staff add {course.slug} {user.name} --role instructor`)."
        )
    enroll(session, course, user, INSTRUCTOR)
    audit.record(session, course, actor.name, AuditAction.STAFF_ADD, user.name, "ta (from the course page)")
    return user


def remove_ta(session: Session, course: Course, name: str, actor: User) -> User:
    """End the TA ``name``'s staff enrollment in ``course`` (their submissions, and the audit
    log's rows of what they did, stay); ``actor`` must be allowed (:func:`may_change_staff`).
    ``UserNotFound`` when ``name`` is not a TA of the course; an instructor is refused
    (``InvalidCourse``): instructors are changed at the terminal. The caller commits."""
    _refuse_unless_staff_changer(session, actor, course)
    found = {u.name: (u, role) for u, role in staff_of(session, course)}.get(name.strip()[:64])
    if found is None:
        raise UserNotFound(f"{name[:64]!r} is not a TA of {course.slug!r}.")
    user, role = found
    if role != "ta":
        raise InvalidCourse(f"{user.name!r} is an instructor of {course.slug!r}; the course page removes TAs only.")
    _end_staff(session, course, user)
    audit.record(session, course, actor.name, AuditAction.STAFF_REMOVE, user.name, "ta (from the course page)")
    return user


def tool_account(session: Session, name: str) -> User:
    """The tool's own account called ``name`` (the CLI's staff commands); ``UserNotFound`` when
    there is none, ``UserAlreadyExists`` when the login is an account an LMS made."""
    user = managed_user(session, None, name)
    platform = made_by_lms(session, user.id)
    if platform is not None:
        raise UserAlreadyExists(
            f"Not added: {lms_clash(name, platform)} (staff are added by login only to the tool's own accounts)."
        )
    return user


def correction_author(session: Session, course: Course, by: str | None, pepper: bytes) -> str:
    """The login a correction made at a terminal is signed with: ``by``, else the owner of
    ``PPO_GRADER_TOKEN``; either must be staff of ``course``. Refused (``InvalidCourse``,
    naming the staff) when neither is given."""
    if by is not None:
        return _staff(session, course, _user(session, by), f"{by[:64]!r}").name
    token = os.environ.get(TOKEN_ENV, "").strip()
    if token:
        owner = user_for_token(session, token, pepper)
        return _staff(session, course, owner, f"the owner of {TOKEN_ENV}").name
    staff = ", ".join(u.name for u in members(session, course, INSTRUCTOR)) or "none yet"
    raise InvalidCourse(
        f"Say who makes this correction (the learner reads the name): --by NAME, one of {course.slug!r}'s "
        f"staff ({staff}), or set {TOKEN_ENV} to your own token."
    )


def _user(session: Session, name: str) -> User | None:
    try:
        return managed_user(session, None, name)
    except UserNotFound:
        return None


def _staff(session: Session, course: Course, user: User | None, who: str) -> User:
    if user is None:
        raise UserNotFound(f"No user {who[:80]} here (for --by, name a staff account of {course.slug!r}).")
    if course_role(session, user, course) != INSTRUCTOR:
        raise InvalidCourse(
            f"{user.name!r} is not staff of {course.slug!r}; add them with "
            f"`ppo-grader courses staff add {course.slug} {user.name} --role ta`, or name someone who is."
        )
    return user
