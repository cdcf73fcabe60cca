"""Users, courses and memberships made or linked from a validated launch (or a roster member).

- A user is found by the launch's ``sub`` on its platform (``LtiUser``), never by the email or
  name the LMS sends (those are display text: an LMS could send anyone's email). A new ``sub``
  gets a new account: a login name made from the LMS username, the email's local part or the
  name (``ada.lovelace``; ``-2``, ``-3`` ... when taken), the LMS's name as display name.
- Staff of the course (``server.lti.claims.standing``) teach that course (its enrollment role
  ``instructor``); learners are enrolled as learners. An LMS never sets an account's global
  role: accounts it makes are learner accounts, whose staff powers are the courses they teach
  (the dashboard's instructor pages, for those courses only: ``server.courses.service``), so a
  TA in one LMS course gains nothing where they learn, and an LMS's instructor, nothing over
  other LMSs' or the tool's users. Nobody is made an instructor or admin account by an LMS.
- An LMS course (context) is linked to one of our courses. Its first launch by staff creates
  the course (slug from the context's label); a learner cannot be the first in, since no
  instructor has opened it yet. The link is the platform's context, whichever installation
  (deployment id) launches: a second installation of the tool in the LMS (Canvas's account and
  sub-account) opens the course the first one linked, so one LMS course is one course here and
  its gradebook columns hold that course's scores only (:func:`linked_context`).
- Every launch and roster sync records the member's LMS roles and marks them active
  (``LtiMember``); the roster sync marks those the LMS no longer lists as dropped
  (:func:`drop_member`). A dropped member no longer teaches the course: their instructor
  enrollment ends (a learner's stays, with their work), so the dashboard, their sessions and
  tokens lose its staff pages at once; a later launch or sync that lists them again restores it.
- Made race-safe for two first launches at once (two tabs, two of the staff): every row a
  launch may be the first to make (the course and its link, the account and its link, the
  enrollment, the member) is claimed in one statement (``server.db.insert_unless_taken``);
  the launch that loses reads the winner's row, or tries the next free name or slug.
"""

from __future__ import annotations

import re
import secrets
from datetime import datetime

from sqlalchemy import case, delete, select
from sqlalchemy.orm import Session

from server.courses.service import INSTRUCTOR, LEARNER, SLUG_PATTERN, claim_course, enroll
from server.db import insert_unless_taken
from server.lti.claims import Standing, roles_text, standing
from server.lti.errors import LaunchRefused
from server.lti.launch import Launch
from server.models import ApiToken, Course, Enrollment, LtiContext, LtiMember, LtiUser, Role, TokenScope, User, utcnow
from server.text_guard import display_text, is_printable_text
from server.users.service import NAME_PATTERN, claim_user, issue_token

_NOT_NAME = re.compile(r"[^a-z0-9._-]+")


def _candidate(*sources: str | None) -> str:
    """A login-name stem from the first source that yields one (lowercased, a-z0-9._-)."""
    for source in sources:
        if not source:
            continue
        stem = _NOT_NAME.sub("-", source.split("@")[0].strip().lower()).strip("-._")[:48]
        if stem and NAME_PATTERN.match(stem):
            return stem
    return "lti-" + secrets.token_hex(4)


def _numbered(stem: str) -> list[str]:
    """``stem``, ``stem-2`` ... ``stem-999``: the names (or slugs) tried, in order."""
    return [stem] + [f"{stem}-{n}" for n in range(2, 1000)]


def _free_names(session: Session, stem: str) -> list[str]:
    """The names of ``stem``'s series (:func:`_numbered`) no account has now, in order."""
    # The candidates themselves are looked up (no LIKE: "_" and "%" in a stem are wildcards,
    # and a prefix match capped at N rows can miss the very names that collide).
    options = _numbered(stem)
    taken = set(session.scalars(select(User.name).where(User.name.in_(options))))
    return [name for name in options if name not in taken] + [f"{stem}-{secrets.token_hex(4)}"]


def _display(name: str, fallback: str) -> str:
    return display_text(name, 128) or fallback


def person(
    session: Session,
    platform_id: int,
    sub: str,
    *,
    name: str = "",
    email: str | None = None,
    username: str | None = None,
) -> User:
    """The account of LMS user ``sub`` on a platform, made on first sight (a learner account:
    what they teach is their enrollments, and no token until a launch signs them in:
    :func:`session_token_id`); its display name and email follow the LMS's. Two
    first sights at once make one account: the login name and the link are each claimed in one
    statement, and the loser takes the next free name, or the winner's account. The caller commits."""
    email = email if email and is_printable_text(email) else None
    found = _linked_user(session, platform_id, sub)
    if found is not None:
        user, link = found
        if name:
            user.display_name = _display(name, user.display_name)
        if email:
            link.email = email
        return user
    stem = _candidate(username, email, name)
    for login in _free_names(session, stem):
        created = claim_user(session, login, Role.LEARNER, _display(name, login))
        if created is None:  # taken since we looked: by a concurrent first sight of this very person?
            found = _linked_user(session, platform_id, sub)
            if found is not None:
                return found[0]
            continue
        linked = session.get(LtiUser, (platform_id, sub))  # a link to an account that is gone
        if linked is not None:
            linked.user_id = created.id
        elif (
            insert_unless_taken(
                session, LtiUser, {"platform_id": platform_id, "sub": sub, "user_id": created.id, "email": email}
            )
            is None
        ):  # a concurrent launch linked this person first: theirs is the account
            session.execute(delete(User).where(User.id == created.id))
            session.expunge(created)
            found = _linked_user(session, platform_id, sub)
            assert found is not None
            return found[0]
        session.flush()
        return created
    raise AssertionError("unreachable: the last candidate name is random")  # pragma: no cover


def _linked_user(session: Session, platform_id: int, sub: str) -> tuple[User, LtiUser] | None:
    link = session.get(LtiUser, (platform_id, sub))
    user = session.get(User, link.user_id) if link is not None else None
    return (user, link) if user is not None and link is not None else None


def _course_slugs(session: Session, launch: Launch) -> list[str]:
    """The slugs a new LMS course may take, in order (from its label, else its title), those
    taken now left out."""
    assert launch.context is not None
    source = (launch.context.label or launch.context.title).lower()
    stem = _NOT_NAME.sub("-", source).strip("-._")[:48] or "lms-course"
    if not SLUG_PATTERN.match(stem):
        stem = "lms-course"
    options = _numbered(stem)
    taken = set(session.scalars(select(Course.slug).where(Course.slug.in_(options))))
    free = [slug for slug in options if slug not in taken and SLUG_PATTERN.match(slug)]
    return free + [f"{stem}-{secrets.token_hex(4)}"]


def linked_context(session: Session, launch: Launch) -> LtiContext | None:
    """The link of the launch's LMS course, if it has one: the one its own installation made,
    else the first an installation of the same platform made for the same context (the LMS's
    course id: LTI 1.3 recommends it unique per issuer, and Canvas and Moodle make it so). Two
    links of one context exist only from versions before this rule; each keeps its own."""
    if launch.context is None:
        return None
    return session.scalar(
        select(LtiContext)
        .where(LtiContext.platform_id == launch.platform.id, LtiContext.context_id == launch.context.id)
        .order_by(case((LtiContext.deployment_id == launch.deployment_id, 0), else_=1), LtiContext.id)
        .limit(1)
    )


def course_link(session: Session, launch: Launch, is_staff: bool) -> LtiContext:
    """The link of the launch's LMS course to one of ours (made at its first staff launch), its
    service endpoints refreshed from the launch. ``LaunchRefused`` for a launch from outside a
    course, or a learner's into a course no instructor has opened yet."""
    if launch.context is None:
        raise LaunchRefused(
            "Launch from a course", "Open the grader from inside an LMS course (the launch names no course).", 400
        )
    link = linked_context(session, launch)
    if link is None:
        if not is_staff:
            raise LaunchRefused(
                "Course not set up yet",
                "Your instructor has not opened ppo-grader from this LMS course yet. Try again later.",
                403,
            )
        link = _new_link(session, launch)
    if launch.context.title:
        link.title = launch.context.title[:200]
    if launch.memberships_url:
        link.memberships_url = launch.memberships_url
    if launch.ags is not None:
        link.lineitems_url = launch.ags.lineitems or link.lineitems_url
        link.ags_scopes = " ".join(launch.ags.scopes)[:1000]
    session.flush()
    return link


def _new_link(session: Session, launch: Launch) -> LtiContext:
    """The first staff launch of an LMS course: a course of ours and the link to it. Two at
    once make one: the slug and the link are each claimed in one statement; the launch that
    loses either takes the winner's link, or tries the next slug (one some other course holds)."""
    assert launch.context is not None
    title = (launch.context.title or launch.context.label or "LMS course")[:200]
    for slug in _course_slugs(session, launch):
        course = claim_course(session, slug, title)
        if course is None:  # taken since we looked: by a concurrent first launch of this course?
            link = linked_context(session, launch)
            if link is not None:
                return link
            continue
        values = {
            "platform_id": launch.platform.id,
            "deployment_id": launch.deployment_id,
            "context_id": launch.context.id,
            "course_id": course.id,
            "title": title,
        }
        link_id = insert_unless_taken(session, LtiContext, values)
        first = linked_context(session, launch) if link_id is None else _first_link(session, launch)
        if link_id is None or (first is not None and first.id != link_id):
            # a concurrent launch linked this LMS course first (to another slug; or another
            # installation's launch, which the unique key does not see): theirs is the link
            if link_id is not None:
                session.execute(delete(LtiContext).where(LtiContext.id == link_id))
            session.execute(delete(Course).where(Course.id == course.id))
            session.expunge(course)
            assert first is not None
            return first
        made = session.get(LtiContext, link_id)
        assert made is not None
        return made
    raise AssertionError("unreachable: the last candidate slug is random")  # pragma: no cover


def _first_link(session: Session, launch: Launch) -> LtiContext | None:
    """The oldest link of the launch's context on its platform, any installation's."""
    assert launch.context is not None
    return session.scalar(
        select(LtiContext)
        .where(LtiContext.platform_id == launch.platform.id, LtiContext.context_id == launch.context.id)
        .order_by(LtiContext.id)
        .limit(1)
    )


def record_member(
    session: Session, link: LtiContext, user: User, roles: list[str] | tuple[str, ...], now: datetime | None = None
) -> str:
    """Enroll ``user`` in the linked course as the LMS roles say and mark them active; returns
    the course role (``instructor`` or ``learner``)."""
    course = session.get(Course, link.course_id)
    assert course is not None
    role = INSTRUCTOR if standing(roles) is Standing.STAFF else LEARNER
    enroll(session, course, user, role)
    member = session.get(LtiMember, (link.id, user.id))
    if member is None:  # claimed in one statement: the same person's two first launches at once
        insert_unless_taken(session, LtiMember, {"context_id": link.id, "user_id": user.id, "roles": ""})
        member = session.get(LtiMember, (link.id, user.id))
        assert member is not None
    member.roles = roles_text(roles)
    member.status = "active"
    member.seen_at = now or utcnow()
    session.flush()
    return role


def drop_member(session: Session, link: LtiContext, member: LtiMember) -> bool:
    """Mark a member the LMS lists as inactive, or no longer lists, as dropped; returns whether
    they were active. Their work and a learner's enrollment stay (grades are no longer sent:
    ``server.lti.grades``); an instructor enrollment ends, so whatever they held of the course's
    staff pages (the dashboard, a session, a token) is gone at their next request. A launch or
    sync that lists them again restores it (:func:`record_member`). Run for a member dropped
    already too: one dropped before a drop ended staff access loses it at the next sync."""
    session.execute(
        delete(Enrollment).where(
            Enrollment.course_id == link.course_id,
            Enrollment.user_id == member.user_id,
            Enrollment.role == INSTRUCTOR,
        )
    )
    if member.status == "dropped":
        return False
    member.status = "dropped"
    return True


def session_token_id(session: Session, user: User, pepper: bytes) -> int:
    """The id of a live, unlimited token of ``user`` for a web session (the newest; one made
    if none): never a read-only or course-limited one, which opens no session
    (``server.web.session``). The web session is bound to a token row like a login with a
    token, so revoking the user's tokens ends it; the made token's text is never shown (the
    learner makes their own for a terminal)."""
    token_id = session.scalar(
        select(ApiToken.id)
        .where(
            ApiToken.user_id == user.id,
            ApiToken.revoked_at.is_(None),
            ApiToken.scope == TokenScope.FULL.value,
            ApiToken.course_id.is_(None),
        )
        .order_by(ApiToken.id.desc())
        .limit(1)
    )
    if token_id is None:
        issue_token(session, user, pepper)
        session.flush()
        token_id = session.scalar(
            select(ApiToken.id).where(ApiToken.user_id == user.id).order_by(ApiToken.id.desc()).limit(1)
        )
    assert token_id is not None
    return int(token_id)
