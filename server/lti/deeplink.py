"""Deep linking (LTI Deep Linking 2.0): from the LMS's "add external tool" picker, an
instructor chooses exercises; the tool answers with one content item per exercise.

- :func:`open_request` remembers a validated deep-linking request (``LtiDeepLink``: where to
  answer, the platform's opaque ``data``) under a random token for 30 minutes. The picker page
  carries the token (not the web session: the launch signs nobody in), used at most once,
  and only by the instructor whose launch opened it: from the browser that launch came to (a
  cookie holding the token's MAC, set with the picker: ``server.lti.router``) and while they
  still teach the course (:func:`pending`; a TA the LMS drops meanwhile cannot send it).
- :func:`answer` asks the LMS for the chosen exercises' columns outside any transaction, in
  one listing of the course's line items (one token, one paged read within one budget for the
  whole answer, however many are ticked; a failure stops it, and the answer says so: see
  :func:`_columns`), then publishes each chosen exercise in the course (if it is not in its set yet) and signs the ``LtiDeepLinkingResponse``: an ``ltiResourceLink`` per exercise whose custom
  parameter ``exercise`` says what it opens, and a ``lineItem`` (``resourceId`` = the slug,
  ``tag`` ppo-grader) only when the LMS has no such column yet (looked up first), so the LMS
  shows one assignment per exercise however often it is linked.
"""

from __future__ import annotations

import json
import logging
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from server.catalogue.service import find_exercise, list_exercises
from server.catalogue.verification import publishable
from server.courses.service import INSTRUCTOR, course_role
from server.courses.sets import course_exercises, publish
from server.db import insert_unless_taken
from server.errors import ExerciseNotVerified
from server.lti import claims as c
from server.lti import keys
from server.lti.errors import LaunchRefused, LmsUnreachable
from server.lti.launch import Launch, StrictJSON
from server.lti.lineitems import line_item_spec, listed_columns, remembered
from server.lti.services import LmsClient
from server.models import Course, LtiContext, LtiDeepLink, LtiLineItem, LtiPlatform, User, utcnow

log = logging.getLogger(__name__)

REQUEST_SECONDS = 1800
MAX_CHOSEN = 100


@dataclass(frozen=True)
class Offer:
    """An exercise the picker offers: its slug, title, and whether the course publishes it."""

    slug: str
    title: str
    published: bool


def open_request(
    session: Session, launch: Launch, link: LtiContext, user: User, now: datetime | None = None
) -> LtiDeepLink:
    """Remember a validated deep-linking request (the caller commits)."""
    assert launch.deep_linking is not None
    now = now or utcnow()
    row = LtiDeepLink(
        token=secrets.token_urlsafe(32),
        context_id=link.id,
        user_id=user.id,
        return_url=launch.deep_linking.return_url,
        data=launch.deep_linking.data,
        deployment_id=launch.deployment_id,
        accept_multiple=launch.deep_linking.accept_multiple,
        created_at=now,
        expires_at=now + timedelta(seconds=REQUEST_SECONDS),
    )
    session.add(row)
    session.flush()
    return row


def offers(session: Session, course: Course) -> list[Offer]:
    """Every catalogue exercise the course publishes or may publish (a pack exercise that never
    passed ``exercises verify`` at its version is left out: ``publish`` would refuse it), with
    whether the course already publishes it."""
    published = set(course_exercises(session, course))
    return [
        Offer(x.slug, x.title, x.slug in published)
        for x in list_exercises()
        if x.slug in published or publishable(session, find_exercise(x.slug))
    ]


def pending(session: Session, token: str, now: datetime | None = None) -> LtiDeepLink:
    """The unused, unexpired request with this token, its instructor still teaching the course
    (not dropped by the LMS since: ``server.lti.accounts.drop_member``); ``LaunchRefused``
    otherwise. (That the form comes from the browser that opened it is the router's check.)"""
    row = session.scalar(select(LtiDeepLink).where(LtiDeepLink.token == token[:64])) if token else None
    if row is None:
        raise LaunchRefused("Unknown request", "This picker was not opened by a launch from the LMS.", 404)
    if row.used_at is not None:
        raise LaunchRefused(
            "Already sent", "These exercises were already sent to the LMS. Open the picker again from the LMS.", 409
        )
    if row.expires_at < (now or utcnow()):
        raise LaunchRefused(
            "Picker expired", "The picker was open for more than 30 minutes. Open it again from the LMS.", 403
        )
    link = session.get(LtiContext, row.context_id)
    course = session.get(Course, link.course_id) if link is not None else None
    opener = session.get(User, row.user_id)
    if course is None or opener is None or course_role(session, opener, course) != INSTRUCTOR:
        raise LaunchRefused(
            "No longer an instructor here",
            "The LMS no longer lists the person who opened this picker among the course's instructors.",
            403,
        )
    return row


@dataclass(frozen=True)
class Answer:
    """The signed response and where the browser posts it."""

    return_url: str
    jwt: str
    items: int
    line_items_asked: int
    #: What the instructor is told besides (the LMS's columns could not be read), or None.
    note: str | None = None


def answer(
    session: Session,
    secret: bytes,
    request: LtiDeepLink,
    chosen: list[str],
    launch_url: str,
    now: datetime | None = None,
) -> Answer:
    """Sign the deep-linking response for ``chosen`` exercises (the caller commits).

    Never inside a transaction while the LMS answers: first what is needed is read (and the
    tool's key made, on first use, and committed: nothing else is written yet), then the LMS
    is asked for each column the tool does not know, then, in the caller's one short
    transaction, the request is spent (an UPDATE that checks it is unused, so a double submit
    cannot answer twice), the exercises published and the columns recorded."""
    now = now or utcnow()
    link = session.get(LtiContext, request.context_id)
    assert link is not None
    course = session.get(Course, link.course_id)
    platform = session.get(LtiPlatform, link.platform_id)
    assert course is not None and platform is not None
    titles = {x.slug: x.title for x in offers(session, course)}
    picked = [slug for slug in dict.fromkeys(chosen) if slug in titles][:MAX_CHOSEN]
    if not picked:  # each one chosen has left the catalogue, or is no longer verified, since the picker
        raise LaunchRefused(
            "Nothing to send",
            "None of the exercises chosen can be added now (removed from the catalogue, or not verified at its "
            "current version). Open the picker again from the LMS.",
            409,
        )
    if not request.accept_multiple:
        picked = picked[:1]
    known = {slug: row.url for slug, row in remembered(session, link).items()}
    keys.signing_key(session, secret)
    session.commit()  # ends the read (and stores a first key): no transaction across the LMS's answers
    # the client signs, and keeps its token requests' outcomes, in short transactions of its own
    # on the request's database: nothing of this session's is open (or written) while the LMS answers
    with LmsClient(sessionmaker(bind=session.get_bind(), expire_on_commit=False), secret, platform) as client:
        found, trouble = _columns(client, link, known, picked)
    spent = session.execute(
        update(LtiDeepLink)
        .where(LtiDeepLink.id == request.id, LtiDeepLink.used_at.is_(None))
        .values(used_at=now)
        .execution_options(synchronize_session=False)
    )
    if not spent.rowcount:  # type: ignore[attr-defined]
        raise LaunchRefused("Already sent", "These exercises were already sent to the LMS.", 409)
    published = set(course_exercises(session, course))
    rows = remembered(session, link)  # read again: a grades job may have found a column meanwhile
    items: list[dict[str, Any]] = []
    asked = 0
    for slug in picked:
        if slug not in published:
            _publish_once(session, course, slug)
        item: dict[str, Any] = {
            "type": c.RESOURCE_LINK_TYPE,
            "title": titles[slug],
            "url": launch_url,
            "custom": {c.CUSTOM_EXERCISE: slug},
        }
        row = rows.get(slug)
        url = found[slug]
        if isinstance(url, str) and (row is None or not row.url):
            if row is not None:
                row.url, row.claimed_at = url[:2000], None
            elif not _line_item_added(session, link, slug, url[:2000]):  # another answer's row: fill it in
                session.execute(
                    update(LtiLineItem)
                    .where(LtiLineItem.context_id == link.id, LtiLineItem.exercise == slug, LtiLineItem.url.is_(None))
                    .values(url=url[:2000], claimed_at=None)
                )
        elif url is None and row is None and _line_item_added(session, link, slug, None):
            # the LMS has none: the answer asks for it, remembered as asked (a row another answer
            # added at the same moment means that one asked: none is asked for twice)
            item["lineItem"] = line_item_spec(slug, titles[slug])
            asked += 1
        items.append(item)
    claims: dict[str, Any] = {
        "iss": platform.client_id,
        "aud": platform.issuer,
        "azp": platform.client_id,
        "nonce": secrets.token_urlsafe(16),
        c.DEPLOYMENT_ID: request.deployment_id or link.deployment_id,  # the request's installation
        c.MESSAGE_TYPE: c.DEEP_LINKING_RESPONSE,
        c.VERSION: c.LTI_VERSION,
        c.CONTENT_ITEMS: items,
        c.DL_MESSAGE: f"Added {len(items)} exercise{'s' if len(items) != 1 else ''} from ppo-grader.",
    }
    note = None
    if trouble is not None:
        note = _trouble_note(trouble, picked, [i["custom"][c.CUSTOM_EXERCISE] for i in items if "lineItem" in i])
        claims[c.DL_MESSAGE] += " " + note
        log.warning("deep linking %s: %s", course.slug, note)
    if request.data is not None:
        claims[c.DEEP_LINKING_DATA] = _given_back(request.data)  # as the platform sent it
    session.flush()
    return Answer(request.return_url, keys.sign(session, secret, claims), len(items), asked, note)


def _given_back(data: str) -> Any:
    """The platform's ``data``, as stored at the request, to sign back: JSON (no NaN or
    Infinity) whose text is all encodable (no lone surrogate), as the launch checks it
    (``server.lti.launch._opaque``); a request stored before that check is refused by name."""
    try:
        value = json.loads(data, cls=StrictJSON)
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode()
    except (ValueError, RecursionError, UnicodeError):
        raise LaunchRefused(
            "Unreadable deep-linking data",
            "The LMS's data for this request is not JSON ppo-grader can sign back (NaN, or a lone surrogate). "
            "Open the picker again from the LMS.",
        ) from None
    return value


def _publish_once(session: Session, course: Course, slug: str) -> None:
    """Publish ``slug`` in ``course`` unless another answer (or a staff member) published it at
    the same moment: in a savepoint, so the other's set entry (its primary key) stands and this
    answer goes on (on SQLite writers queue, so only PostgreSQL meets this). An exercise whose
    verify lapsed since the picker was opened is refused with a page (never the API's JSON, which
    names the pack's folder on the server)."""
    try:
        with session.begin_nested():
            publish(session, course, slug, actor="lti-deep-link")
    except IntegrityError:
        log.info("deep linking: %s/%s was published by another answer at the same moment", course.slug, slug)
    except ExerciseNotVerified:
        raise LaunchRefused(
            "Exercise not verified",
            f"The exercise {slug[:64]!r} has not passed ppo-grader's checks at its current version, so it cannot "
            "be added to a course. Ask the grader's administrator to verify it, then open the picker again.",
            409,
        ) from None


def _line_item_added(session: Session, link: LtiContext, slug: str, url: str | None) -> bool:
    """Add the exercise's column row (``url``, or None for one asked for) unless one exists
    (``server.db.insert_unless_taken``: another answer's row, added at the same moment, is
    kept); whether this call added it."""
    return insert_unless_taken(session, LtiLineItem, {"context_id": link.id, "exercise": slug, "url": url}) is not None


#: What :func:`_columns` found out: the column's URL, :data:`EXISTS` (the LMS has one the tool
#: cannot call, or the tool is waiting for one it asked for), or None (none: ask for it).
EXISTS = True


def _columns(
    client: LmsClient, link: LtiContext, known: dict[str, str | None], picked: list[str]
) -> tuple[dict[str, str | bool | None], str | None]:
    """Whether the LMS has (or is making) each exercise's column, asked of the LMS alone (no
    database), and why it could not be asked (None: it was). Remembered with a URL: it exists;
    the others are looked up by resource id and tag in one listing of the course's columns
    (``server.lti.lineitems.listed_columns``: one token, one paged read within one budget for
    the whole answer, however many exercises are ticked). When that fails, nothing more is
    asked of the LMS: a remembered row decides, and with none the item asks for a column
    (which the answer's message names). A column the LMS lists with an id the tool cannot call
    exists: none is asked for (nothing is remembered; the grades job reports the id)."""
    found: dict[str, str | bool | None] = {slug: EXISTS for slug in picked if known.get(slug)}
    wanted = [slug for slug in picked if slug not in found]
    try:
        listed = listed_columns(client, link, wanted)
    except LmsUnreachable as exc:
        found.update({slug: EXISTS if slug in known else None for slug in wanted})
        return found, exc.detail
    for slug in wanted:
        if slug in listed.unusable:
            found[slug] = EXISTS  # listed, with an id the tool cannot call: it exists; the grades job says why
        elif slug in listed.urls:
            found[slug] = listed.urls[slug]
        else:  # none, or asked for by an earlier answer the LMS has not acted on yet
            found[slug] = EXISTS if slug in known else None
    return found, None


def _trouble_note(trouble: str, picked: list[str], asked: list[str]) -> str:
    """What the instructor is told when the LMS's columns could not be read: every exercise is
    linked, and which of them ask the LMS for a new column (one it may already have)."""
    parts = [f"The LMS's gradebook columns could not be read ({trouble[:200]}), so none was looked up."]
    if asked:
        parts.append(
            f"A new column was asked for {_names(asked)}: if the LMS had one for any of these already, "
            "it may now show two (remove the newer)."
        )
    others = [slug for slug in picked if slug not in asked]
    if others:
        parts.append(
            f"No new column was asked for {_names(others)}: ppo-grader knows of one already, or asked for it before."
        )
    return " ".join(parts)


def _names(slugs: list[str], most: int = 10) -> str:
    """Up to ``most`` exercise slugs, then how many more."""
    shown = ", ".join(slugs[:most])
    return shown + (f" and {len(slugs) - most} more" if len(slugs) > most else "")
