"""One LMS gradebook column (AGS line item) per exercise of a linked course, never two.

A line item the tool wants is identified by ``resourceId`` = the exercise slug and ``tag`` =
``ppo-grader`` (``server.lti.claims.LINE_ITEM_TAG``). Before creating one, the tool looks it
up by both in the LMS (so a column made by a deep-linking answer, by an earlier installation,
or by a second linking of the same exercise is reused), and remembers its URL
(``LtiLineItem``). A remembered row with no URL and no claim means "the LMS is creating it
from a deep-linking answer": while that answer is recent (:data:`LINKING_WAIT` since the course's last
answered linking request) it is only looked up, never created (the LMS makes it when it acts
on the answer: a column made meanwhile would be a second one), and the exercise's scores wait
(:class:`ColumnWaiting`, retried by the next job); after it, looked up, then created.

Creating is claimed first, in the database: the row's ``claimed_at`` holds the claim's time
(its ``url`` None) until the LMS's answer is recorded (the URL set, the claim cleared). The
claim is one compare-and-set statement (an insert that loses to an existing row, or an update
only while the row has no URL and no live claim), so of two jobs at once (the CLI's ``grades
apply`` and the background job, on SQLite or PostgreSQL) one creates, the other waits for its
URL or for the next job. A claim older than :data:`CLAIM_EXPIRY` (its job crashed mid-way) is
taken over by the next; a failed creation lets go of its claim (the row goes).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.orm import Session

from server.db import SessionFactory, insert_unless_taken, transaction
from server.lti.claims import LINE_ITEM_TAG, SCOPE_LINEITEM, SCOPE_RESULT_READ, SCOPE_SCORE
from server.lti.errors import LmsUnreachable
from server.lti.http import lms_url
from server.lti.services import LmsClient
from server.models import LtiContext, LtiDeepLink, LtiLineItem, utcnow

#: The token scopes every AGS job asks for (line items, scores, results).
AGS_SCOPES = (SCOPE_LINEITEM, SCOPE_SCORE, SCOPE_RESULT_READ)
SCORE_MAXIMUM = 100
#: How long a column a deep-linking answer asked for is waited for (the LMS makes it when the
#: instructor saves the assignment); after it, the grades job looks it up, then creates it.
LINKING_WAIT = timedelta(hours=1)
#: The age at which a job's claim to create a column is stale (a crashed job; one creation is
#: one LMS request, within the client's 15 s deadline), and another job may take it over.
CLAIM_EXPIRY = timedelta(minutes=5)
#: How many times, a quarter second apart, a job that lost the claim reads the winner's URL.
_CLAIM_READS = 40


class ColumnWaiting(Exception):
    """The exercise's column is being made (by the LMS from a deep-linking answer, or by
    another job): its scores wait for the next job (not a failure: nothing is created)."""


def usable(url: str | None) -> bool:
    """Whether a remembered value is a column's URL (not None, not empty)."""
    return bool(url)


def line_item_spec(exercise: str, title: str) -> dict[str, object]:
    """The line item the tool asks for an exercise (in a deep-linking answer or a create)."""
    return {"scoreMaximum": SCORE_MAXIMUM, "label": title[:200], "resourceId": exercise, "tag": LINE_ITEM_TAG}


def remembered(session: Session, link: LtiContext) -> dict[str, LtiLineItem]:
    """The line items remembered for a course, by exercise."""
    return {row.exercise: row for row in session.scalars(select(LtiLineItem).where(LtiLineItem.context_id == link.id))}


def lookup(client: LmsClient, link: LtiContext, exercise: str) -> str | None:
    """The URL of the LMS's line item for ``exercise``, if it has one (by resource id and tag)."""
    if not link.lineitems_url:
        return None
    found = client.line_items(link.lineitems_url, AGS_SCOPES, resource_id=exercise, tag=LINE_ITEM_TAG)
    return str(found[0]["id"]) if found else None


@dataclass(frozen=True)
class Listed:
    """What one listing of the course's columns found for some exercises: each one's column URL
    (``urls``), and those listed with an id the tool cannot call (``unusable``: exercise -> why;
    the column exists, so none is asked for)."""

    urls: dict[str, str]
    unusable: dict[str, str]


def listed_columns(client: LmsClient, link: LtiContext, exercises: list[str]) -> Listed:
    """The LMS's columns for ``exercises`` (by resource id and tag), from one listing of the
    course's line items tagged ppo-grader: one token and one paged read for them all, within
    one ``server.lti.services.MAX_PAGED_SECONDS`` budget, however many exercises (a deep-linking
    answer's). ``LmsUnreachable`` when it cannot be read (nothing is taken from part of it)."""
    if not link.lineitems_url or not exercises:
        return Listed({}, {})
    wanted = set(exercises)
    urls: dict[str, str] = {}
    unusable: dict[str, str] = {}
    for item in client.tagged_line_items(link.lineitems_url, AGS_SCOPES, tag=LINE_ITEM_TAG):
        slug = item.get("resourceId")
        if not isinstance(slug, str) or slug not in wanted:
            continue
        try:  # every listed column of the exercise, as lookup checks them: none is skipped
            lms_url(item.get("id"), f"the gradebook column {slug!r} on {client.platform.name}")
        except LmsUnreachable as exc:
            unusable.setdefault(slug, exc.detail)
            continue
        urls.setdefault(slug, str(item["id"]))
    for slug in unusable:
        urls.pop(slug, None)
    return Listed(urls, unusable)


def line_item_url(sessions: SessionFactory, client: LmsClient, link: LtiContext, exercise: str, title: str) -> str:
    """The line item for ``exercise``: remembered, else found, else (claimed, then) created.
    :class:`ColumnWaiting` while a recent deep-linking answer asks the LMS for it, or another
    job holds the claim. Never inside a transaction while the LMS answers: what the LMS says
    is recorded afterwards, in a short transaction of its own. A crash between the LMS's
    making a column and its recording here loses nothing and makes no second column: the next
    job finds it by resource id and tag before it would create one."""
    now = utcnow()
    known, linked = _read(sessions, link.id, exercise)
    if known is not None and usable(known.url):
        return known.url  # type: ignore[return-value]
    if not link.lineitems_url:
        raise LmsUnreachable(
            "The LMS has not given this course a line items service (Assignment and Grade Services): "
            "enable it for the tool, then launch once from the course."
        )
    url = lookup(client, link, exercise)
    if url is None:
        asked = known is not None and known.claimed_at is None  # by a deep-linking answer
        if asked and linked is not None and linked > now - LINKING_WAIT:
            raise ColumnWaiting("the LMS is making this column from a deep-linking answer")
        if not _claim(sessions, link.id, exercise, known, now):
            return _winners(sessions, link.id, exercise)
        try:
            url = str(client.create_line_item(link.lineitems_url, AGS_SCOPES, line_item_spec(exercise, title))["id"])
        except BaseException:
            with transaction(sessions) as session:  # let go of the claim: the next job claims it again
                session.execute(
                    delete(LtiLineItem)
                    .where(
                        LtiLineItem.context_id == link.id,
                        LtiLineItem.exercise == exercise,
                        LtiLineItem.url.is_(None),
                        LtiLineItem.claimed_at == now,
                    )
                    .execution_options(synchronize_session=False)
                )
            raise
    with transaction(sessions) as session:
        remember(session, link.id, exercise, url)
    return url[:2000]


@dataclass(frozen=True)
class _Known:
    """A remembered row's state: its URL (None: no column known) and its claim's time."""

    url: str | None
    claimed_at: datetime | None


def _read(sessions: SessionFactory, link_id: int, exercise: str) -> tuple[_Known | None, datetime | None]:
    """The remembered row (None: there is none) and when the course's last linking answer went."""
    with sessions() as session:
        row = session.execute(
            select(LtiLineItem.url, LtiLineItem.claimed_at).where(
                LtiLineItem.context_id == link_id, LtiLineItem.exercise == exercise
            )
        ).first()
        linked = session.scalar(select(func.max(LtiDeepLink.used_at)).where(LtiDeepLink.context_id == link_id))
    return (_Known(row[0], row[1]) if row is not None else None), linked


def _live_claim(known: _Known | None, now: datetime) -> bool:
    """Whether another job holds a live claim on the column (one younger than :data:`CLAIM_EXPIRY`)."""
    return known is not None and known.claimed_at is not None and known.claimed_at > now - CLAIM_EXPIRY


def _claim(sessions: SessionFactory, link_id: int, exercise: str, known: _Known | None, now: datetime) -> bool:
    """Claim the creation of a column (``claimed_at`` = ``now``); False when another job holds
    it. One statement, compared and set on the row: an insert that loses to an existing row, or
    an update only while the row has no URL and no live claim (none, or a stale one), so of two
    jobs at once exactly one claims it, on SQLite and PostgreSQL alike."""
    if _live_claim(known, now):
        return False
    with transaction(sessions) as session:
        if known is None:
            values = {"context_id": link_id, "exercise": exercise, "url": None, "claimed_at": now}
            return insert_unless_taken(session, LtiLineItem, values) is not None
        taken = session.execute(
            update(LtiLineItem)
            .where(
                LtiLineItem.context_id == link_id,
                LtiLineItem.exercise == exercise,
                or_(LtiLineItem.url.is_(None), LtiLineItem.url == ""),
                or_(LtiLineItem.claimed_at.is_(None), LtiLineItem.claimed_at <= now - CLAIM_EXPIRY),
            )
            .values(claimed_at=now)
            .execution_options(synchronize_session=False)
        )
        return taken.rowcount == 1  # type: ignore[attr-defined]


def _winners(sessions: SessionFactory, link_id: int, exercise: str) -> str:
    """The URL the job holding the claim records (read a few seconds), else :class:`ColumnWaiting`."""
    for _ in range(_CLAIM_READS):
        known, _linked = _read(sessions, link_id, exercise)
        if known is not None and usable(known.url):
            return known.url  # type: ignore[return-value]
        if known is None or known.claimed_at is None:
            break  # its creation failed (the claim let go): the next job tries again
        time.sleep(0.25)
    raise ColumnWaiting("another job is making this column")


def remember(session: Session, link_id: int, exercise: str, url: str) -> None:
    """Record the URL of an exercise's column (a row made, or its URL set: a deep-linking
    answer may have made the row meanwhile; the caller commits)."""
    values = {"context_id": link_id, "exercise": exercise, "url": url[:2000], "claimed_at": None}
    if insert_unless_taken(session, LtiLineItem, values) is None:
        session.execute(
            update(LtiLineItem)
            .where(LtiLineItem.context_id == link_id, LtiLineItem.exercise == exercise)
            .values(url=url[:2000], claimed_at=None)
            .execution_options(synchronize_session=False)
        )


def forget(session: Session, link_id: int, exercise: str, url: str) -> None:
    """Drop a remembered URL the LMS no longer knows (404), so the next job looks it up again
    and creates it if need be (the row goes: an empty one would read as a column a linking
    answer asked for). Only that URL: another job may have remembered a new one meanwhile
    (the caller commits)."""
    session.execute(
        delete(LtiLineItem)
        .where(LtiLineItem.context_id == link_id, LtiLineItem.exercise == exercise, LtiLineItem.url == url[:2000])
        .execution_options(synchronize_session=False)
    )
