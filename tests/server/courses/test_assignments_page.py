"""``/dashboard/assignments`` (``server.dashboard.assignments``): a course's set for its staff, in
process (SQLite and PostgreSQL). A TA (an account enrolled as the course's instructor) moves a
due date: the page first shows the dry run's count, then applies it on confirm, and the
learner's score and page follow; the forms need their token and the same origin; a learner
gets 404 for the page and its posts; bad input answers the page with a message, never a 500."""

from __future__ import annotations

import logging
import re
from html import unescape

import pytest
from sqlalchemy import select

from server.courses.service import INSTRUCTOR, enroll
from server.db import transaction
from server.models import Course, SetEntry, User
from server.web.session import COOKIE_NAME, form_token
from tests.server.courses.conftest import CLOSE, DAY, DUE, HOUR, RELEASE, Term

COURSE = "winter"
PAGE = "/dashboard/assignments"


@pytest.fixture
def winter(term: Term) -> Term:
    """winter: actor-loss due Friday 17:00 Paris, 10% per started day; ann (learner) submitted
    an hour late; tara, a learner account enrolled as the course's instructor (a TA)."""
    term.course(COURSE)
    term.enroll(COURSE, "ann")
    term.user("tara")
    with transaction(term.api.state.session_factory) as session:
        course = session.scalar(select(Course).where(Course.slug == COURSE))
        tara = session.scalar(select(User).where(User.name == "tara"))
        assert course is not None and tara is not None
        enroll(session, course, tara, INSTRUCTOR)
    rules = {"release_at": RELEASE, "due_at": DUE, "close_at": CLOSE + 3 * DAY, "penalty_percent": 10}
    assert term.publish(COURSE, **rules).status_code == 200
    assert term.submit_at(DUE + HOUR, "ann")["counted_score"] == 67.5
    return term


def _log_in(term: Term, name: str) -> str:
    """Log ``name`` in (the client's cookie jar); the form token of that session."""
    term.client.cookies.clear()
    landed = term.client.post("/login", data={"token": term.tokens[name]["Authorization"].split()[1]},
                              follow_redirects=False)
    assert landed.status_code == 303
    return form_token(term.client.cookies[COOKIE_NAME], term.api.state.settings.secret_bytes)


def _form(csrf: str, **fields: str) -> dict[str, str]:
    base = {"csrf": csrf, "course": COURSE, "exercise": "actor-loss", "action": "publish",
            "release": "2026-12-07T09:00:00", "due": "2026-12-11T17:00:00", "close": "2026-12-16T17:00:00",
            "penalty": "10", "per": "day", "attempts": "", "feedback": "full", "version": ""}
    return {**base, **fields}


def _counted(term: Term) -> float:
    scores = term.client.get(f"/api/v1/courses/{COURSE}/scores", headers=term.instructor).json()["scores"]
    return next(s["counted_score"] for s in scores if s["learner"] == "ann" and s["exercise"] == "actor-loss")


def _due(term: Term) -> object:
    with term.api.state.session_factory() as session:
        course = session.scalar(select(Course).where(Course.slug == COURSE))
        assert course is not None
        entry = session.get(SetEntry, (course.id, "actor-loss"))
        return entry.due_at if entry else None


def test_a_ta_moves_a_due_date_after_seeing_the_count(winter: Term, caplog: pytest.LogCaptureFixture) -> None:
    csrf = _log_in(winter, "tara")
    klass = winter.client.get("/dashboard", params={"course": COURSE}).text
    assert f'href="{PAGE}?course={COURSE}">Assignments</a>' in klass  # in the course's navigation
    shown = winter.client.get(PAGE, params={"course": COURSE})
    assert shown.status_code == 200
    sections = dict(re.findall(r'<section class="assignment" id="set-[^"]+" data-exercise="([^"]+)" '
                               r'data-published="(yes|no)"', shown.text))
    assert len(sections) > 3 and sections["actor-loss"] == "yes" and sections["gae"] == "no"  # the catalogue
    actor = shown.text[shown.text.index('id="set-actor-loss"'):shown.text.index('id="set-', shown.text.index('id="set-actor-loss"') + 1)]
    assert "2026-12-11 17:00:00 CET" in actor and "10% off per day late" in actor and "no limit" in actor
    assert 'value="2026-12-11T17:00:00"' in actor  # the form, filled in the course's zone

    moved = _form(csrf, due="2026-12-11T19:00:00")  # ann's submission (18:00) is on time now
    asked = winter.client.post(PAGE, data=moved, follow_redirects=False)
    assert asked.status_code == 200 and 'id="reprice-count" data-counted="1" data-rewritten="1"' in asked.text
    assert _counted(winter) == 67.5 and _due(winter) == DUE  # nothing applied yet
    confirm = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', asked.text))
    assert confirm["confirm"] == "1" and confirm["due"] == "2026-12-11T19:00:00"
    with caplog.at_level(logging.INFO, logger="server.courses.sets"):
        done = winter.client.post(PAGE, data={k: unescape(v) for k, v in confirm.items()}, follow_redirects=False)
    assert done.status_code == 303 and "done=actor-loss" in done.headers["location"]
    assert "counted=1" in done.headers["location"]
    assert _counted(winter) == 75.0 and _due(winter) == DUE + 2 * HOUR
    assert any("published by tara" in r.getMessage() and "1 counted scores changed" in r.getMessage()
               for r in caplog.records)  # who did it (the log line the service writes)
    assert "Saved actor-loss. 1 counted scores changed." in winter.client.get(done.headers["location"]).text

    _log_in(winter, "ann")
    own = winter.client.get("/dashboard/learners/ann").text
    assert re.search(r'<td class="due"><time [^>]*>2026-12-11 19:00:00 CET</time>', own)

    # a change that does not touch the due date or late rule applies at once
    csrf = _log_in(winter, "tara")
    limited = winter.client.post(PAGE, data=_form(csrf, due="2026-12-11T19:00:00", attempts="3"),
                                 follow_redirects=False)
    assert limited.status_code == 303
    gone = winter.client.post(PAGE, data=_form(csrf, exercise="gae", action="unpublish"), follow_redirects=False)
    assert gone.status_code == 404 and "not published" in gone.text  # the service's refusal, on the page
    new = winter.client.post(PAGE, data=_form(csrf, exercise="gae"), follow_redirects=False)
    assert new.status_code == 303  # a new set over no submission: nothing to confirm
    assert winter.client.post(PAGE, data=_form(csrf, exercise="gae", action="unpublish"),
                              follow_redirects=False).status_code == 303


def test_the_forms_need_the_token_the_origin_and_a_teacher(winter: Term) -> None:
    csrf = _log_in(winter, "tara")
    form = _form(csrf, due="2026-12-12T17:00:00", confirm="1")
    assert winter.client.post(PAGE, data={**form, "csrf": ""}, follow_redirects=False).status_code == 403
    forged = winter.client.post(PAGE, data=form, headers={"Origin": "https://evil.example"}, follow_redirects=False)
    assert forged.status_code == 403
    assert winter.client.post(PAGE, data={**form, "course": "nope"}, follow_redirects=False).status_code == 404
    assert _due(winter) == DUE

    ann_csrf = _log_in(winter, "ann")
    assert winter.client.get(PAGE, params={"course": COURSE}).status_code == 404
    refused = winter.client.post(PAGE, data={**form, "csrf": ann_csrf}, follow_redirects=False)
    assert refused.status_code == 404 and _due(winter) == DUE
    assert 'Assignments</a>' not in winter.client.get("/dashboard/learners/ann").text


@pytest.mark.parametrize(
    ("fields", "status", "message"),
    [
        ({"penalty": "lots"}, 400, "The late penalty must be a percent from 0 to 100"),
        ({"penalty": "150"}, 400, "The late penalty must be a percent from 0 to 100"),
        ({"per": "week"}, 400, "per day or per hour"),
        ({"attempts": "0"}, 400, "The attempt limit must be a whole number from 1"),
        ({"due": "next friday"}, 400, "The due date &#x27;next friday&#x27; is not a date and time"),
        ({"due": "2026-12-01T17:00:00"}, 422, "The due date (2026-12-01 17:00:00 CET (Europe/Paris)) is before the release"),
        ({"feedback": "whenever"}, 422, "whenever"),
        ({"feedback": "hidden-until-due", "due": ""}, 422, "give a due date"),
        ({"version": "deadbeef"}, 409, "deadbeef"),
        ({"action": "delete"}, 400, "Choose publish, unpublish, release or hold."),
        ({"exercise": "no-such"}, 404, "There is no exercise &#x27;no-such&#x27; in the catalogue."),
    ],
)
def test_bad_input_answers_the_page_with_a_message(winter: Term, fields: dict[str, str], status: int,
                                                   message: str) -> None:
    csrf = _log_in(winter, "tara")
    answer = winter.client.post(PAGE, data=_form(csrf, **fields), follow_redirects=False)
    assert answer.status_code == status, answer.text[-500:]
    assert message in answer.text and 'role="alert"' in answer.text and "<h1>Assignments</h1>" in answer.text
    assert _due(winter) == DUE and _counted(winter) == 67.5
