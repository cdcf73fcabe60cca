"""The roster from the LMS (Names and Role Provisioning Services 2.0): ``ppo-grader lti
sync-roster COURSE`` and the course LTI page's button (run by the background job:
``server.lti.tasks``). No transaction is open while the LMS answers: the members are read
first, then applied in one transaction.

Every member the LMS lists as Active gets their account and enrollment (as a launch would make
them: ``server.lti.accounts``) with the role the LMS gives them now. A member the LMS lists as
Inactive or Deleted, or no longer lists at all, is marked ``dropped`` (``LtiMember.status``,
``server.lti.accounts.drop_member``): never deleted, so their submissions, scores and history
stay, and they are left out of the grades sent back; one who taught the course (a TA, an
instructor) no longer does: their instructor enrollment ends. Members with no role in the
course (a Mentor, say) are skipped.

The LMS's answer is as old as the moment it was asked for (a big course's pages, a slow LMS):
a member whose launch came after that (``LtiMember.seen_at``, set by each launch) is never
changed by it, neither dropped nor given the answer's roles (a TA role the LMS took away before
the launch, say, which the answer still lists), as the answer cannot know what came since; the
next sync decides.

Every text of a member is the LMS's JSON, where a lone surrogate or a NUL is valid: it passes
``server.text_guard`` with a cap before anything is stored. A member whose ``user_id`` or roles
fail it (or are not strings, or hold a control character) is skipped and counted
(``RosterSync.invalid``), never a 500; a name or email that is not storable is left out (the
account keeps the name it has), and one holding control characters is kept without them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.db import SessionFactory, transaction
from server.lti.accounts import drop_member, person, record_member
from server.lti.claims import MAX_ROLES, SCOPE_MEMBERSHIPS, Standing, roles_text, standing
from server.lti.errors import LmsUnreachable
from server.lti.services import LmsClient
from server.models import Enrollment, LtiContext, LtiMember, LtiPlatform, LtiUser, User, utcnow
from server.text_guard import display_text, is_printable_text, printable_text

_LEFT = {"inactive", "deleted"}


@dataclass
class RosterSync:
    """What one sync did, by login name."""

    added: list[str] = field(default_factory=list)
    role_changed: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    unchanged: int = 0
    #: Members with no role in the course (a Mentor ...).
    skipped: int = 0
    #: Members whose ``user_id`` or roles are not printable text (or not strings): left out.
    invalid: int = 0
    requests: int = 0


def sync_roster(sessions: SessionFactory, link_id: int, secret: bytes) -> RosterSync:
    """Pull the course's members from the LMS and apply them, in a transaction of its own once
    the LMS has answered (none is open while it answers). ``LmsUnreachable`` when the LMS
    cannot be read, or the link is gone (nothing is changed then)."""
    with sessions() as session:  # reads only
        found = session.get(LtiContext, link_id)
        platform = session.get(LtiPlatform, found.platform_id) if found is not None else None
        if found is None or platform is None:
            raise LmsUnreachable("The course is no longer linked to an LMS course.")
        memberships_url = found.memberships_url
        session.expunge(platform)
    if not memberships_url:
        raise LmsUnreachable(
            f"{platform.name} has not given this course a roster service the tool can call (Names and Role "
            "Provisioning, at an https URL): enable it for the tool in the LMS, then launch once from the course."
        )
    asked = utcnow()  # the answer says nothing of a member seen (a launch) after this
    with LmsClient(sessions, secret, platform) as client:
        members = client.members(memberships_url, (SCOPE_MEMBERSHIPS,))
        done = RosterSync(requests=client.requests)
    with transaction(sessions) as session:
        link = session.get(LtiContext, link_id)
        if link is None:
            raise LmsUnreachable("The course is no longer linked to an LMS course.")
        _apply(session, link, platform.id, members, asked, done)
    return done


def _apply(
    session: Session,
    link: LtiContext,
    platform_id: int,
    members: list[dict[str, Any]],
    asked: datetime,
    done: RosterSync,
) -> None:
    now = utcnow()
    before = {
        m.user_id: m
        for m in session.scalars(
            select(LtiMember).where(LtiMember.context_id == link.id).execution_options(populate_existing=True)
        )
    }
    enrolled = {
        user_id: role
        for user_id, role in session.execute(
            select(Enrollment.user_id, Enrollment.role).where(Enrollment.course_id == link.course_id)
        ).tuples()
    }
    listed: set[int] = set()
    for member in members:
        readable = _identity(member)
        if readable is None:
            done.invalid += 1
            continue
        sub, roles = readable
        where = standing(roles)
        if where is Standing.NONE:
            done.skipped += 1
            continue
        known = session.get(LtiUser, (platform_id, sub))
        row = before.get(known.user_id) if known is not None else None
        if known is not None:
            listed.add(known.user_id)
        if row is not None and row.seen_at >= asked:  # launched since the ask: the launch is newer
            done.unchanged += 1
            continue
        if str(member.get("status", "Active")).lower() in _LEFT:
            if row is not None and drop_member(session, link, row):
                done.dropped.append(session.scalar(select(User.name).where(User.id == row.user_id)) or sub)
            continue
        user = person(
            session,
            platform_id,
            sub,
            name=_text(member.get("name"))
            or " ".join(filter(None, (_text(member.get("given_name")), _text(member.get("family_name"))))),
            email=_text(member.get("email")) or None,
        )
        listed.add(user.id)
        old = before.get(user.id)
        was = (old.roles, old.status) if old is not None else None
        was_role = enrolled.get(user.id)
        new_role = record_member(session, link, user, roles, now)
        if was_role is None:
            done.added.append(user.name)
        elif was_role != new_role or (was is not None and was != (roles_text(roles), "active")):
            done.role_changed.append(user.name)
        else:
            done.unchanged += 1
    for user_id, row in before.items():
        if user_id not in listed and row.seen_at < asked and drop_member(session, link, row):
            name = session.scalar(select(User.name).where(User.id == user_id))
            done.dropped.append(name or str(user_id))
    link.roster_synced_at = now
    session.flush()


def _identity(member: dict[str, Any]) -> tuple[str, list[str]] | None:
    """A member's ``user_id`` and roles (those read: :data:`~server.lti.claims.MAX_ROLES`), or
    None when the id is not printable text of at most 255 characters, the roles are not a list,
    or a role read is not printable text (``server.text_guard.printable_text``)."""
    sub, roles = printable_text(member.get("user_id"), 255), member.get("roles")
    if not sub or not isinstance(roles, list):
        return None
    read = [r for r in roles[:MAX_ROLES] if isinstance(r, str)]
    if any(not is_printable_text(r) for r in read):
        return None
    return sub, read


def _text(value: object) -> str:
    """A member's display text (name, email) without control characters, cut to 200; empty
    when not storable (``server.text_guard.display_text``)."""
    return display_text(value, 200) or ""
