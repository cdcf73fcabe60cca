"""One LMS gradebook column (AGS line item) per exercise of a linked course, never two.

A line item the tool wants is identified by ``resourceId`` = the exercise slug and ``tag`` =
``ppo-grader`` (``server.lti.claims.LINE_ITEM_TAG``). Before creating one, the tool looks it
up by both in the LMS (so a column made by a deep-linking answer, by an earlier installation,
or by a second linking of the same exercise is reused), and remembers its URL
(``LtiLineItem``). A remembered row with no URL means "the LMS is creating it from a
deep-linking answer": it is looked up, and created only if the LMS never did.
"""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from server.db import SessionFactory, insert_unless_taken, transaction
from server.lti.claims import LINE_ITEM_TAG, SCOPE_LINEITEM, SCOPE_RESULT_READ, SCOPE_SCORE
from server.lti.errors import LmsUnreachable
from server.lti.services import LmsClient
from server.models import LtiContext, LtiLineItem

#: The token scopes every AGS job asks for (line items, scores, results).
AGS_SCOPES = (SCOPE_LINEITEM, SCOPE_SCORE, SCOPE_RESULT_READ)
SCORE_MAXIMUM = 100


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


def line_item_url(sessions: SessionFactory, client: LmsClient, link: LtiContext, exercise: str, title: str) -> str:
    """The line item for ``exercise``: remembered, else found, else created. Never inside a
    transaction while the LMS answers: what the LMS says is recorded afterwards, in a short
    transaction of its own. A crash between the LMS's making a column and its recording here
    loses nothing and makes no second column: the next job finds it by resource id and tag
    before it would create one."""
    with sessions() as session:
        known = session.scalar(
            select(LtiLineItem.url).where(LtiLineItem.context_id == link.id, LtiLineItem.exercise == exercise)
        )
    if known:
        return known
    if not link.lineitems_url:
        raise LmsUnreachable(
            "The LMS has not given this course a line items service (Assignment and Grade Services): "
            "enable it for the tool, then launch once from the course."
        )
    url = lookup(client, link, exercise)
    if url is None:
        url = str(client.create_line_item(link.lineitems_url, AGS_SCOPES, line_item_spec(exercise, title))["id"])
    with transaction(sessions) as session:
        remember(session, link.id, exercise, url)
    return url[:2000]


def remember(session: Session, link_id: int, exercise: str, url: str) -> None:
    """Record the URL of an exercise's column (a row made, or its URL set: a deep-linking
    answer may have made the row meanwhile; the caller commits)."""
    values = {"context_id": link_id, "exercise": exercise, "url": url[:2000]}
    if insert_unless_taken(session, LtiLineItem, values) is None:
        session.execute(
            update(LtiLineItem)
            .where(LtiLineItem.context_id == link_id, LtiLineItem.exercise == exercise)
            .values(url=url[:2000])
            .execution_options(synchronize_session=False)
        )


def forget(session: Session, link_id: int, exercise: str) -> None:
    """Drop a remembered URL the LMS no longer knows (404), so the next job looks it up again
    (the caller commits)."""
    session.execute(
        update(LtiLineItem)
        .where(LtiLineItem.context_id == link_id, LtiLineItem.exercise == exercise)
        .values(url="")
        .execution_options(synchronize_session=False)
    )
