"""The assignments page's "Release hidden scores now" and "Hold scores until the due date"
(``server.courses.sets.release_scores``), over real HTTP (uvicorn; SQLite and PostgreSQL): a TA
releases a ``hidden-until-due`` exercise's scores before its due date and the learner's API reads
them at once; holding hides them again; each is in the audit log under the TA. A second release,
a hold without a due date, a learner, another course's instructor and a form without its token
are refused and change nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from html import unescape

from sqlalchemy import select

from server.models import AuditEvent, SetEntry
from tests.server.dashboard import test_staff_regrades
from tests.server.dashboard.test_staff_regrades import COURSE, Site

site = test_staff_regrades.site  # the fixture: spring, its TA tara, ann's graded actor-loss

ASSIGNMENTS = "/dashboard/assignments"


def _seen(site: Site) -> tuple[str, float | None]:
    """What ann's API answers about her submission: the view and the score."""
    got = site.api("GET", f"/submissions/{site.submission}", "ann").json()
    return got["feedback_view"], got["score"]


def _policy(site: Site) -> str:
    with site.factory() as session:
        entry = session.scalar(select(SetEntry).where(SetEntry.exercise == "actor-loss"))
        assert entry is not None
        return entry.feedback_policy


def test_a_ta_releases_and_holds_the_scores(site: Site) -> None:
    client, csrf = site.browser("tara")
    form = {"csrf": csrf, "course": COURSE, "exercise": "actor-loss"}
    page = client.get(f"{ASSIGNMENTS}?course={COURSE}").text
    assert 'class="hold inline"' not in page and 'class="release inline"' not in page  # no due date: nothing to hold
    refused = client.post(ASSIGNMENTS, data={**form, "action": "hold"})
    assert refused.status_code == 422 and "give a due date" in unescape(refused.text)

    due = (datetime.now(UTC) + timedelta(days=3)).isoformat()
    put = site.api("PUT", f"/courses/{COURSE}/exercises/actor-loss", json={"due_at": due, "feedback_policy": "hidden-until-due"})
    assert put.status_code == 200, put.text
    assert _seen(site) == ("hidden", None)
    assert 'class="release inline"' in client.get(f"{ASSIGNMENTS}?course={COURSE}").text

    released = client.post(ASSIGNMENTS, data={**form, "action": "release"})
    assert released.status_code == 303, released.text
    assert _seen(site) == ("full", 75.0) and _policy(site) == "full"
    again = client.post(ASSIGNMENTS, data={**form, "action": "release"})
    assert again.status_code == 422 and "are not held back" in unescape(again.text)
    assert 'class="hold inline"' in client.get(f"{ASSIGNMENTS}?course={COURSE}").text

    held = client.post(ASSIGNMENTS, data={**form, "action": "hold"})
    assert held.status_code == 303, held.text
    assert _seen(site) == ("hidden", None) and _policy(site) == "hidden-until-due"

    # A learner and another course's instructor get the 404 page; no token is a 403; nothing moves.
    for who in ("ann", "olga"):
        other, other_csrf = site.browser(who)
        got = other.post(ASSIGNMENTS, data={**form, "csrf": other_csrf, "action": "release"})
        assert got.status_code == 404, (who, got.status_code)
    assert client.post(ASSIGNMENTS, data={**form, "csrf": "", "action": "release"}).status_code == 403
    assert _policy(site) == "hidden-until-due"
    with site.factory() as session:
        events = [(e.actor, e.action) for e in session.scalars(select(AuditEvent).where(AuditEvent.action.like("scores.%")))]
    assert events == [("tara", "scores.release"), ("tara", "scores.hold")]
