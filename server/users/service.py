"""User and token rules: creation, lookup by token, the first-start instructor, who may
manage whom, issuing (scoped), listing, revoking and rotating tokens, roster import."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from server.db import insert_unless_taken
from server.errors import (
    GraderError,
    InvalidRoster,
    OutsideTokenScope,
    TokenNotFound,
    TokenPrefixAmbiguous,
    UserAlreadyExists,
    UserNotFound,
)
from server.models import ApiToken, Course, LtiPlatform, LtiUser, Role, TokenScope, User, utcnow
from server.security import display_prefix, hash_token, new_token
from server.text_guard import display_text, is_storable_text

#: The login alphabet (docs/instructors.md, "Logins"): what an LMS or a student information
#: system calls a person, lower-cased: ``ada``, ``s2041187`` (an SIS id), ``zoe.smith@uni.edu``.
#: 1-64 characters (the column's width) of a-z, 0-9, '.', '_', '-', starting with a letter or
#: digit, and at most one '@' followed by a domain (letters, digits, '.', '-'; no trailing dot).
#: Every character is URL-safe in a path and a query, so no login needs escaping to be typed
#: or linked; '+' (a space in a query string) and upper case are refused, never rewritten.
NAME_PATTERN = re.compile(r"^(?=.{1,64}$)[a-z0-9][a-z0-9._-]*(?:@[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)?$")
MAX_NAME_CHARS = 64
FIRST_INSTRUCTOR_NAME = "instructor"


def login_problem(name: str) -> str | None:
    """Why ``name`` is not a login (one sentence a roster's author can act on), or None."""
    if NAME_PATTERN.match(name):
        return None
    if not name:
        return "the login is empty"
    if len(name) > MAX_NAME_CHARS:
        return f"the login is {len(name)} characters long; at most {MAX_NAME_CHARS}"
    if not is_storable_text(name) or not name.isascii():
        return "the login has characters outside a-z, 0-9, '.', '_', '-' and one '@'"
    if name != name.lower():
        return "the login has upper-case letters; write it in lower case"
    if "+" in name:
        return "the login has a '+' (it reads as a space in a web address); use the address without its +tag"
    if name.count("@") > 1:
        return "the login has more than one '@'"
    if not name[0].isalnum():
        return "the login must start with a letter or a digit"
    if "@" in name and not re.match(r"^[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?$", name.split("@", 1)[1]):
        return "the part after '@' must be a domain (letters, digits, '.', '-'), e.g. uni.edu"
    return "the login has characters outside a-z, 0-9, '.', '_', '-' and one '@'"


@dataclass(frozen=True)
class NewUser:
    """A created user and the plaintext token that exists only in this object."""

    user: User
    token: str


def create_user(
    session: Session,
    name: str,
    role: Role,
    pepper: bytes,
    display_name: str | None = None,
) -> NewUser:
    """Create a user with one token; the caller commits. Raises ``UserAlreadyExists``."""
    problem = login_problem(name)
    if problem is not None:
        raise GraderError(
            f"{problem[0].upper()}{problem[1:]} ({name[:80]!r}). A login is 1-64 characters of a-z, 0-9, "
            "'.', '_', '-', starting with a letter or digit, with at most one '@' before a domain "
            "(zoe.smith@uni.edu).",
            status_code=422,
            error_name="InvalidUserName",
        )
    if display_name is not None and not is_storable_text(display_name):
        raise GraderError(
            "Display names may not contain NUL bytes or unpaired surrogates.",
            status_code=422,
            error_name="InvalidDisplayName",
        )
    # Display names are printed in terminals and pages: control characters and bidirectional
    # overrides come out here, as they do for the names an LMS sends (text_guard.display_text).
    if display_name is not None:
        display_name = display_text(display_name, 128) or None
    user = claim_user(session, name, role, display_name)
    if user is None:  # taken, or taken a moment ago by a concurrent create
        raise UserAlreadyExists(f"A user named {name!r} exists already.")
    token = issue_token(session, user, pepper)
    session.flush()
    return NewUser(user=user, token=token)


def claim_user(session: Session, name: str, role: Role, display_name: str | None = None) -> User | None:
    """A new user called ``name`` (a valid name: the caller checked), or None when the name is
    taken, also by a concurrent request that has not committed yet (``server.db.insert_unless_taken``:
    the name is claimed in one statement, so two requests cannot both get it and the loser's
    transaction stays usable). No token; the caller commits."""
    user_id = insert_unless_taken(
        session, User, {"name": name, "display_name": display_name or name, "role": Role(role).value}
    )
    return None if user_id is None else session.get(User, user_id)


def issue_token(
    session: Session,
    user: User,
    pepper: bytes,
    *,
    scope: TokenScope = TokenScope.FULL,
    course_id: int | None = None,
    label: str | None = None,
) -> str:
    """Add a new token for ``user`` and return its plaintext (never stored): ``scope`` and
    ``course_id`` narrow it (``server.token_scope``; the caller checked the course is one the
    user may reach), ``label`` names it in listings."""
    return _add_token(session, user, pepper, TokenScope(scope), course_id, label)[0]


def _add_token(
    session: Session, user: User, pepper: bytes, scope: TokenScope, course_id: int | None, label: str | None
) -> tuple[str, ApiToken]:
    token = new_token()
    row = ApiToken(
        user=user,
        token_hash=hash_token(token, pepper),
        prefix=display_prefix(token),
        scope=scope.value,
        course_id=course_id,
        label=display_text(label, 64) or None,
    )
    session.add(row)
    return token, row


@dataclass(frozen=True)
class Grant:
    """A live token and its owner: who calls, and how far this token lets them reach."""

    user: User
    token: ApiToken


def grant_for_token(session: Session, token: str, pepper: bytes) -> Grant | None:
    """The live (unrevoked) token matching ``token`` and its owner, or None."""
    row = session.execute(
        select(User, ApiToken)
        .join(ApiToken, ApiToken.user_id == User.id)
        .where(ApiToken.token_hash == hash_token(token, pepper), ApiToken.revoked_at.is_(None))
    ).first()
    return None if row is None else Grant(user=row[0], token=row[1])


def user_for_token(session: Session, token: str, pepper: bytes) -> User | None:
    """The owner of a live (unrevoked) token, or None (who it is, not what it may do)."""
    grant = grant_for_token(session, token, pepper)
    return None if grant is None else grant.user


def issue_narrower(
    session: Session,
    grant: Grant,
    pepper: bytes,
    *,
    scope: TokenScope | None,
    course_id: int | None,
    label: str | None = None,
) -> tuple[str, ApiToken]:
    """A new token for the grant's owner, never wider than the grant's token: its scope
    (None: the same) at most the grant's, and limited to the grant's course if that is
    (``course_id`` None: the same reach as the grant). ``OutsideTokenScope`` otherwise. The
    caller checked the course is one the owner may reach, and commits."""
    parent = TokenScope(grant.token.scope)
    wanted = parent if scope is None else TokenScope(scope)
    if not parent.covers(wanted):
        raise OutsideTokenScope(f"This token's scope is {parent.value!r}: it cannot make a {wanted.value!r} token.")
    reach = grant.token.course_id if course_id is None else course_id
    if grant.token.course_id is not None and reach != grant.token.course_id:
        raise OutsideTokenScope("This token is limited to one course: it can make tokens for that course only.")
    made = _add_token(session, grant.user, pepper, wanted, reach, label)
    session.flush()
    return made


@dataclass(frozen=True)
class TokenListing:
    """One of a user's tokens as a listing shows it (never its text or hash)."""

    token: ApiToken
    course: str | None


def list_tokens(session: Session, user: User, course_id: int | None = None) -> list[TokenListing]:
    """``user``'s tokens, live and revoked, oldest first; with ``course_id`` only those limited
    to that course (what a course-limited token may see of its owner's)."""
    query = (
        select(ApiToken, Course.slug)
        .outerjoin(Course, Course.id == ApiToken.course_id)
        .where(ApiToken.user_id == user.id)
        .order_by(ApiToken.id)
    )
    if course_id is not None:
        query = query.where(ApiToken.course_id == course_id)
    return [TokenListing(token, slug) for token, slug in session.execute(query).tuples()]


def listing_of(session: Session, token: ApiToken) -> TokenListing:
    """One token as a listing shows it."""
    course = None if token.course_id is None else session.get(Course, token.course_id)
    return TokenListing(token, None if course is None else course.slug)


def revoke_token(session: Session, user: User, prefix: str, course_id: int | None = None) -> ApiToken:
    """Revoke the live token of ``user`` with this listed prefix (a whole token works too: its
    prefix is taken); with ``course_id`` only one limited to that course. ``TokenNotFound``,
    or ``TokenPrefixAmbiguous`` if two share it. The caller commits."""
    query = select(ApiToken).where(
        ApiToken.user_id == user.id, ApiToken.prefix == display_prefix(prefix.strip()), ApiToken.revoked_at.is_(None)
    )
    if course_id is not None:
        query = query.where(ApiToken.course_id == course_id)
    found = list(session.scalars(query.limit(2)))
    if not found:
        raise TokenNotFound(f"{user.name!r} has no live token {prefix[:16]!r}.")
    if len(found) > 1:
        raise TokenPrefixAmbiguous(
            f"Two live tokens of {user.name!r} start with {found[0].prefix!r}; revoke all of them instead."
        )
    found[0].revoked_at = utcnow()
    session.flush()
    return found[0]


def list_users(session: Session) -> list[User]:
    """Every user, by name."""
    return list(session.scalars(select(User).order_by(User.name)))


def ensure_first_instructor(session: Session, pepper: bytes) -> NewUser | None:
    """On an empty database, create the ``instructor`` account; otherwise do nothing."""
    if session.scalar(select(func.count()).select_from(User)):
        return None
    return create_user(session, FIRST_INSTRUCTOR_NAME, Role.INSTRUCTOR, pepper, "Instructor")


# --- Who may manage whom -------------------------------------------------------------


def may_manage(actor: User, target: User) -> bool:
    """Anyone may manage themselves; instructors manage learners; admins manage everyone."""
    if actor.id == target.id:
        return True
    actor_role = Role(actor.role)
    if actor_role is Role.ADMIN:
        return True
    return actor_role is Role.INSTRUCTOR and Role(target.role) is Role.LEARNER


def may_create(actor: User, role: Role) -> bool:
    """Instructors create learners; admins create any role."""
    actor_role = Role(actor.role)
    return actor_role is Role.ADMIN or (actor_role is Role.INSTRUCTOR and role is Role.LEARNER)


def managed_user(session: Session, actor: User | None, name: str) -> User:
    """The user called ``name`` if ``actor`` may manage them (None: the CLI, may manage all).

    Someone the actor may not manage answers 404 like a missing one, so names do not leak.
    """
    # a name holding a NUL or a lone surrogate is no one's (PostgreSQL refuses it in a query)
    user = session.scalar(select(User).where(User.name == name)) if is_storable_text(name) else None
    if user is None or (actor is not None and not may_manage(actor, user)):
        raise UserNotFound(f"No user {name!r} that you can manage.")
    return user


def made_by_lms(session: Session, user_id: int) -> str | None:
    """The name of the LMS that made the account (``server.lti.accounts``: a launch or a roster
    sync of an LMS user), None for one of the tool's own. An LMS chooses its users' usernames,
    and the account is named after it, so a login the tool's staff hand out may be an LMS's
    account: adding staff or enrolling by login never takes one (``LtiUser`` links only the
    accounts an LMS made)."""
    return session.scalar(
        select(LtiPlatform.name)
        .join(LtiUser, LtiUser.platform_id == LtiPlatform.id)
        .where(LtiUser.user_id == user_id)
        .order_by(LtiPlatform.id)
        .limit(1)
    )


def lms_clash(name: str, platform: str) -> str:
    """Why the login ``name`` is not taken for staff or a roster: an LMS's account holds it."""
    return (
        f"the login {name!r} is an account the LMS {platform!r} made for one of its users, not one of the "
        "tool's own: it is only ever in the courses that LMS puts it in; give this person another login"
    )


# --- Tokens --------------------------------------------------------------------------


def revoke_tokens(session: Session, user: User) -> int:
    """Revoke every live token of ``user``; returns how many. The caller commits."""
    result = session.execute(
        update(ApiToken)
        .where(ApiToken.user_id == user.id, ApiToken.revoked_at.is_(None))
        .values(revoked_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


def rotate_token(session: Session, user: User, pepper: bytes) -> tuple[str, int]:
    """Revoke every live token of ``user`` and issue one new one: (new token, revoked count)."""
    revoked = revoke_tokens(session, user)
    token = issue_token(session, user, pepper)
    session.flush()
    return token, revoked


# --- Roster import -------------------------------------------------------------------


@dataclass(frozen=True)
class RosterOutcome:
    """One roster line's fate: created (with its token, shown once) or skipped (why)."""

    line: int
    name: str
    display_name: str
    role: Role | None
    token: str | None = None
    error: str | None = None
    course: str | None = None


ROSTER_MAX_ROWS = 5000

#: Given a roster row's ``course`` cell, checks the course (raising a ``GraderError`` whose
#: detail is reported on the row) and returns what enrolls a user in it: (user, account
#: role) -> the course's slug.
Enroll = Callable[[str], Callable[[User, Role], str]]


def import_roster(
    session: Session, text: str, pepper: bytes, actor: User | None = None, enroll: Enroll | None = None
) -> list[RosterOutcome]:
    """Create users from CSV text with columns ``name,display_name[,role][,course]``.

    A header row is required. Every valid new row gets a user and a token; a duplicate (in
    the database or earlier in the file), an invalid name or role, or a role the actor may
    not create is reported on its line and skipped, never fatal. With ``enroll``
    (``server.courses``), every row's user is also put in a course, and a user who exists
    already is enrolled rather than skipped, unless an LMS made that account (a login an LMS
    user's username took: :func:`made_by_lms`), which is reported on its line and never
    enrolled. The caller commits.
    """
    try:
        return _import_rows(session, text, pepper, actor, enroll)
    except csv.Error as exc:  # a malformed CSV is the uploader's to fix, not a server error
        raise InvalidRoster(f"The roster is not valid CSV: {exc}.") from None


def _import_rows(
    session: Session, text: str, pepper: bytes, actor: User | None, enroll: Enroll | None
) -> list[RosterOutcome]:
    # newline="" lets the csv module see quoted newlines and bare carriage returns itself
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff"), newline=""))
    fields = [f.strip().lower() for f in reader.fieldnames or []]
    if "name" not in fields:
        raise InvalidRoster("The roster needs a header row with a 'name' column (name,display_name[,role]).")
    reader.fieldnames = fields
    outcomes: list[RosterOutcome] = []
    seen: set[str] = set()
    for index, row in enumerate(reader, start=2):  # line 1 is the header
        if index - 1 > ROSTER_MAX_ROWS:
            raise InvalidRoster(f"The roster has more than {ROSTER_MAX_ROWS} rows; split it.")
        name = (row.get("name") or "").strip().lower()
        display = (row.get("display_name") or "").strip() or name
        role_text = (row.get("role") or "").strip().lower() or Role.LEARNER.value
        if not name and not any((v or "").strip() for v in row.values() if isinstance(v, str)):
            continue  # a blank line
        try:
            role = Role(role_text)
        except ValueError:
            outcomes.append(RosterOutcome(index, name, display, None, error=f"unknown role {role_text!r}"))
            continue
        if actor is not None and not may_create(actor, role):
            outcomes.append(
                RosterOutcome(index, name, display, role, error=f"you may not create {role.value} accounts")
            )
            continue
        if name in seen:
            outcomes.append(RosterOutcome(index, name, display, role, error="duplicate name earlier in the file"))
            continue
        seen.add(name)
        try:
            # the course is checked before anyone is created, so a refused row adds nothing
            enroll_in = enroll((row.get("course") or "").strip()) if enroll is not None else None
        except GraderError as exc:
            outcomes.append(RosterOutcome(index, name, display, role, error=exc.detail))
            continue
        existing = session.scalar(select(User).where(User.name == name)) if enroll_in is not None else None
        if existing is not None and enroll_in is not None:
            platform = made_by_lms(session, existing.id)
            if platform is not None:
                outcomes.append(RosterOutcome(index, name, display, role, error=lms_clash(name, platform)))
                continue
            joined = enroll_in(existing, Role(existing.role))
            outcomes.append(RosterOutcome(index, name, existing.display_name, Role(existing.role), course=joined))
            continue
        try:
            # create_user checks the name and its uniqueness before adding anything, so a
            # refused row leaves the session clean.
            created = create_user(session, name, role, pepper, display[:128])
            course: str | None = enroll_in(created.user, role) if enroll_in is not None else None
        except UserAlreadyExists:
            outcomes.append(RosterOutcome(index, name, display, role, error="a user with this name exists already"))
            continue
        except GraderError as exc:
            outcomes.append(RosterOutcome(index, name, display, role, error=exc.detail))
            continue
        outcomes.append(RosterOutcome(index, name, display, role, token=created.token, course=course))
    return outcomes


def lock_learner(session: Session, user_id: int) -> None:
    """Serialise one learner's submission inserts until the session's transaction ends.

    PostgreSQL: ``SELECT ... FOR UPDATE`` on the learner's ``users`` row; a concurrent
    submission of the same learner waits here, and its count (a new snapshot per statement
    under READ COMMITTED) then sees the row this transaction inserted. Other learners are
    not blocked.

    SQLite: it has no row locks, and Python's sqlite3 runs SELECTs outside any
    transaction until the first write, so the count would always be stale. ``BEGIN
    IMMEDIATE`` takes the database's write lock now (waiting up to ``busy_timeout``); the
    INSERT needs that lock anyway, so this only moves it before the count. It holds across
    processes, unlike an in-process lock, so it stays right should SQLite ever be served by
    more than one process. Any write already pending in the session is committed first.
    """
    dialect = session.get_bind().dialect.name
    if dialect == "sqlite":
        if session.connection().connection.dbapi_connection.in_transaction:  # type: ignore[union-attr]
            session.commit()
        session.connection().exec_driver_sql("BEGIN IMMEDIATE")
        return
    session.execute(select(User.id).where(User.id == user_id).with_for_update())
