"""Regrades in the browser (``server.dashboard.regrades``) and the course page's staff form
(``server.dashboard.staff``), over real HTTP (uvicorn, ``tests.server.live_server``; SQLite and
PostgreSQL).

A TA (a learner account enrolled as the course's instructor) previews a regrade, reads its
diff, applies it with a reason, and the learner's counted score and submission page follow; a
second set is cancelled. An instructor adds and removes a TA by login; a TA is refused (403)
and the removed TA's past actions stay in the audit log. A learner (of the course, of another)
and another course's instructor get 404 for every page and post; a form without its token or
from another site is refused (403) and changes nothing."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from html import unescape
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from server.app import create_app
from server.config import Settings
from server.courses.service import INSTRUCTOR
from server.models import Course, Enrollment, RegradeSet, Role, User
from tests.server.conftest import (
    audit_events,
    enroll_named,
    logged_in,
    served_api,
    user_id_of,
    user_tokens,
    wait_graded,
)
from tests.server.fakes import FakeGrader, FakeReport
from tests.server.live_server import live_server

COURSE = "spring"
REGRADES, STAFF = "/dashboard/regrades", "/dashboard/staff"
FIXED = FakeReport(
    score=100.0,
    message="4 of 4 checks passed.",
    checks=[c if c.passed else type(c)(c.name, c.weight, True, "ok", None, check_id=c.check_id) for c in FakeReport().checks],
)


@dataclass
class Site:
    """A served app: its URL, session factory, secret, grader and the users' tokens."""

    url: str
    factory: Any
    secret: bytes
    grader: FakeGrader
    tokens: dict[str, str]
    submission: int

    def api(self, method: str, path: str, who: str = "prof", **kwargs: Any) -> httpx.Response:
        return served_api(self.url, self.tokens[who], method, path, **kwargs)

    def browser(self, who: str) -> tuple[httpx.Client, str]:
        """A logged-in client (its cookie jar) and its session's form token."""
        return logged_in(self.url, self.tokens[who], self.secret)

    def counted(self, learner: str = "ann") -> float | None:
        scores = self.api("GET", f"/courses/{COURSE}/scores").json()["scores"]
        return next(s["counted_score"] for s in scores if (s["learner"], s["exercise"]) == (learner, "actor-loss"))

    def events(self) -> list[tuple[str | None, int | None, str, str]]:
        return audit_events(self.factory)

    def user_id(self, name: str) -> int:
        return user_id_of(self.factory, name)

    def staff(self) -> set[str]:
        with self.factory() as session:
            return set(session.scalars(
                select(User.name).join(Enrollment, Enrollment.user_id == User.id).join(Course, Course.id == Enrollment.course_id)
                .where(Course.slug == COURSE, Enrollment.role == INSTRUCTOR)))

    def states(self) -> dict[int, str]:
        with self.factory() as session:
            return {r.id: r.state for r in session.scalars(select(RegradeSet))}


@pytest.fixture
def site(settings: Settings) -> Iterator[Site]:
    """spring: prof (its instructor), tara (a TA), ann and bob (learners); ann handed in
    actor-loss (75 points, the clip check failing). olga teaches another course, eve learns in it."""
    grader = FakeGrader()
    settings = settings.model_copy(update={"RATE_LIMIT": "1000/minute"})
    app = create_app(settings, grader.factory)
    with live_server(app) as url:
        factory = app.state.grader.session_factory
        tokens = user_tokens(factory, settings.secret_bytes, (("prof", Role.INSTRUCTOR), ("olga", Role.INSTRUCTOR),
                                                              ("tara", Role.LEARNER), ("ann", Role.LEARNER),
                                                              ("bob", Role.LEARNER), ("eve", Role.LEARNER)))
        s = Site(url, factory, settings.secret_bytes, grader, tokens, 0)
        assert s.api("POST", "/courses", json={"slug": COURSE, "title": "Spring"}).status_code == 201
        assert s.api("POST", "/courses", "olga", json={"slug": "other", "title": "Other"}).status_code == 201
        enroll_named(factory, [(COURSE, "ann", "learner"), (COURSE, "bob", "learner"), (COURSE, "tara", INSTRUCTOR),
                               ("other", "eve", "learner")])
        assert s.api("PUT", f"/courses/{COURSE}/exercises/actor-loss", json={}).status_code == 200
        sent = s.api("POST", "/submissions", "ann", json={"exercise": "actor-loss", "source": "x = 1\n", "course": COURSE})
        assert sent.status_code == 202, sent.text
        s.submission = sent.json()["id"]
        wait_graded(url, tokens["ann"], s.submission)
        yield s


def _preview(site: Site, client: httpx.Client, csrf: str, **fields: str) -> int:
    """Post the preview form; the set's id from the page it sends the browser to."""
    sent = client.post(REGRADES, data={"csrf": csrf, "course": COURSE, "exercise": "actor-loss", **fields})
    assert sent.status_code == 303, sent.text
    found = re.fullmatch(rf"/dashboard/regrades/(\d+)\?course={COURSE}", sent.headers["location"])
    assert found, sent.headers["location"]
    return int(found.group(1))


def _ready(client: httpx.Client, set_id: int) -> str:
    """The set's page once every result is graded (the page says so)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        shown = client.get(f"{REGRADES}/{set_id}?course={COURSE}")
        assert shown.status_code == 200, shown.text
        if re.search(r'id="regrade-state">ready: (\d+) of \1 graded', shown.text):
            return shown.text
        time.sleep(0.1)
    raise AssertionError(f"regrade {set_id} never ready: {shown.text[:2000]}")


def test_a_ta_applies_a_regrade_and_the_learner_reads_its_reason(site: Site) -> None:
    client, csrf = site.browser("tara")
    listed = client.get(f"{REGRADES}?course={COURSE}")
    assert listed.status_code == 200 and 'id="regrade-preview"' in listed.text and "No regrade in this course yet" in listed.text
    assert 'href="/dashboard/regrades?course=spring"' in listed.text  # the header's link

    site.grader.report = FIXED  # the clip check was wrong, and passes now
    set_id = _preview(site, client, csrf, all_versions="1")
    page = _ready(client, set_id)
    assert "<strong>1</strong> up, <strong>0</strong> down" in page and "actor-loss/clip" in page
    assert 'id="regrade-apply"' in page and 'id="regrade-cancel"' in page
    assert site.counted() == 75.0  # a preview changes nothing learners see
    higher = client.get(f"{REGRADES}/{set_id}?course={COURSE}&keep=higher")
    assert higher.status_code == 200 and '<option value="higher" selected>' in higher.text

    # The reason is required, and capped; neither refusal changes anything.
    for reason, why in (("  ", "Say why"), ("x" * 501, "at most 500 characters")):
        refused = client.post(f"{REGRADES}/{set_id}/apply", data={"csrf": csrf, "course": COURSE, "reason": reason})
        assert refused.status_code == 400 and why in unescape(refused.text)
    assert site.states()[set_id] == "ready" and site.counted() == 75.0

    applied = client.post(f"{REGRADES}/{set_id}/apply",
                          data={"csrf": csrf, "course": COURSE, "reason": "The clip check was too strict.", "keep": "new"})
    assert applied.status_code == 303, applied.text
    assert "done=applied" in applied.headers["location"]
    assert site.counted() == 75.0 + 25.0  # the learner's counted score is the regraded one
    again = client.post(f"{REGRADES}/{set_id}/apply", data={"csrf": csrf, "course": COURSE, "reason": "twice"})
    assert again.status_code == 409 and "applied already" in unescape(again.text)
    shown = client.get(applied.headers["location"])
    assert "Applied: learners whose score changed" in shown.text and 'id="regrade-apply"' not in shown.text

    learner, _ = site.browser("ann")
    mine = learner.get(f"/dashboard/submissions/{site.submission}")
    assert mine.status_code == 200 and 'id="regrades"' in mine.text
    assert "The clip check was too strict." in mine.text and "(counts 100)" in mine.text
    note = site.api("GET", f"/submissions/{site.submission}", "ann").json()["regrades"]
    assert [(n["reason"], n["old_score"], n["new_score"]) for n in note] == [("The clip check was too strict.", 75.0, 100.0)]

    # A second set, cancelled by the TA: nothing changes.
    other = _preview(site, client, csrf, all_versions="1", learner="ann")
    _ready(client, other)
    cancelled = client.post(f"{REGRADES}/{other}/cancel", data={"csrf": csrf, "course": COURSE})
    assert cancelled.status_code == 303 and "done=cancelled" in cancelled.headers["location"]
    assert site.states() == {set_id: "applied", other: "cancelled"} and site.counted() == 100.0
    assert client.post(f"{REGRADES}/{other}/cancel", data={"csrf": csrf, "course": COURSE}).status_code == 409
    rows = client.get(f"{REGRADES}?course={COURSE}").text
    assert f'data-regrade="{set_id}" data-state="applied"' in rows and f'data-regrade="{other}" data-state="cancelled"' in rows

    tara = site.user_id("tara")
    assert [e for e in site.events() if e[2].startswith("regrade.")] == [
        ("tara", tara, "regrade.apply", f"regrade {set_id} (actor-loss)"),
        ("tara", tara, "regrade.cancel", f"regrade {other} (actor-loss)"),
    ]
    course_page = client.get(f"/dashboard?course={COURSE}").text  # the course page's log lists both
    assert course_page.count('data-action="regrade.') == 2


def test_the_preview_form_refuses_bad_input_in_words(site: Site) -> None:
    client, csrf = site.browser("tara")
    for fields, status, said in (
        ({"exercise": "gae"}, 404, "no exercise 'gae' in the course"),
        ({"exercise": "actor-loss", "submission": "abc"}, 400, "A submission is a number"),
        ({"exercise": "actor-loss", "submission": "9" * 40}, 400, "A submission is a number"),
        ({"exercise": "actor-loss", "learner": "nobody"}, 404, "No user 'nobody'"),
        ({"exercise": "actor-loss", "learner": "a\x00b"}, 400, "no control character"),
        ({"exercise": "actor-loss", "learner": "x" * 65}, 400, "at most 64 characters"),
        ({"exercise": "actor-loss"}, 422, "no stale verdict"),  # every verdict is current
    ):
        sent = client.post(REGRADES, data={"csrf": csrf, "course": COURSE, **fields})
        assert sent.status_code == status, (fields, sent.text[:500])
        assert said.lower() in unescape(sent.text).lower(), (fields, sent.text[:3000])
        assert 'id="regrade-preview"' in sent.text  # the form again, to correct
    assert site.states() == {}
    nul = client.post(REGRADES, data={"csrf": csrf, "course": "spring\x00", "exercise": "actor-loss"})
    assert nul.status_code == 404  # a NUL is no course: the same 404 as an unknown one (PostgreSQL included)
    huge = client.get(f"{REGRADES}/{'9' * 40}?course={COURSE}")
    assert huge.status_code == 404
    assert client.get(f"{REGRADES}?course=other").status_code == 404  # a course tara does not teach


def test_a_learner_and_another_course_are_refused_every_route(site: Site) -> None:
    tara, tara_csrf = site.browser("tara")
    site.grader.report = FIXED
    set_id = _preview(site, tara, tara_csrf, all_versions="1")
    _ready(tara, set_id)
    before = (site.states(), site.staff(), site.events(), site.counted())
    for who in ("ann", "eve", "olga"):
        client, csrf = site.browser(who)  # each with a valid form token of their own session
        form = {"csrf": csrf, "course": COURSE}
        for path in (f"{REGRADES}?course={COURSE}", f"{REGRADES}/{set_id}", f"{REGRADES}/{set_id}?course={COURSE}"):
            got = client.get(path)
            assert got.status_code == 404, (who, path, got.status_code)
        for path, data in (
            (REGRADES, {**form, "exercise": "actor-loss", "all_versions": "1"}),
            (f"{REGRADES}/{set_id}/apply", {**form, "reason": "mine now"}),
            (f"{REGRADES}/{set_id}/cancel", form),
            (STAFF, {**form, "action": "add", "login": who}),
            (STAFF, {**form, "action": "remove", "login": "tara"}),
        ):
            got = client.post(path, data=data)
            assert got.status_code == 404, (who, path, got.status_code)
        assert client.get(f"/dashboard?course={COURSE}").status_code in (303, 404)  # a learner goes to their page
        assert site.api("GET", f"/regrades/{set_id}", who).status_code in (403, 404)
    assert (site.states(), site.staff(), site.events(), site.counted()) == before


def test_forms_without_their_token_or_from_another_site_change_nothing(site: Site) -> None:
    tara, csrf = site.browser("tara")
    site.grader.report = FIXED
    set_id = _preview(site, tara, csrf, all_versions="1")
    _ready(tara, set_id)
    prof, prof_csrf = site.browser("prof")
    before = (site.states(), site.staff(), site.events(), site.counted())
    apply = {"course": COURSE, "reason": "forged"}
    for client, path, data, headers in (
        (tara, f"{REGRADES}/{set_id}/apply", apply, {}),  # no token
        (tara, f"{REGRADES}/{set_id}/apply", {**apply, "csrf": "x" * 43}, {}),  # a wrong one
        (tara, f"{REGRADES}/{set_id}/apply", {**apply, "csrf": csrf}, {"Origin": "https://evil.example"}),
        (tara, f"{REGRADES}/{set_id}/cancel", {"course": COURSE}, {}),
        (tara, REGRADES, {"course": COURSE, "exercise": "actor-loss", "all_versions": "1"}, {}),
        (prof, STAFF, {"course": COURSE, "action": "add", "login": "bob"}, {}),
        (prof, STAFF, {"course": COURSE, "action": "remove", "login": "tara", "csrf": prof_csrf},
         {"Origin": "https://evil.example"}),
    ):
        got = client.post(path, data=data, headers=headers)
        assert got.status_code == 403 and "Form refused" in got.text, (path, data, got.status_code)
    assert (site.states(), site.staff(), site.events(), site.counted()) == before
    # Another session's token is not this one's.
    assert tara.post(f"{REGRADES}/{set_id}/cancel", data={"course": COURSE, "csrf": prof_csrf}).status_code == 403


def test_an_instructor_adds_and_removes_a_ta_and_a_ta_cannot(site: Site) -> None:
    prof, prof_csrf = site.browser("prof")
    page = prof.get(f"/dashboard?course={COURSE}").text
    assert '<tr data-login="tara" data-role="ta">' in page and '<tr data-login="prof" data-role="instructor">' in page
    assert 'id="add-ta"' in page and "Remove TA tara" in page

    tara, tara_csrf = site.browser("tara")
    seen = tara.get(f"/dashboard?course={COURSE}").text
    assert '<tr data-login="tara" data-role="ta">' in seen and 'id="staff-readonly"' in seen and 'id="add-ta"' not in seen
    for action, login in (("add", "bob"), ("remove", "tara")):
        refused = tara.post(STAFF, data={"csrf": tara_csrf, "course": COURSE, "action": action, "login": login})
        assert refused.status_code == 403, refused.text
        assert "Only an instructor of 'spring' may add or remove its TAs" in unescape(refused.text)
    assert site.staff() == {"prof", "tara"}

    form = {"csrf": prof_csrf, "course": COURSE}
    for fields, status, said in (
        ({"action": "add", "login": "nobody"}, 404, "No user 'nobody'"),
        ({"action": "add", "login": "olga"}, 422, "an instructor account"),
        ({"action": "add", "login": "tara"}, 422, "staff of 'spring' already"),
        ({"action": "add", "login": "x" * 65}, 400, "1 to 64 characters"),
        ({"action": "add", "login": "bob\x00"}, 400, "no control character"),
        ({"action": "remove", "login": "\x1b[2Jtara"}, 400, "no control character"),
        ({"action": "add", "login": ""}, 400, "1 to 64 characters"),
        ({"action": "remove", "login": "prof"}, 422, "removes TAs only"),
        ({"action": "remove", "login": "ann"}, 404, "not a TA"),
        ({"action": "promote", "login": "ann"}, 400, "Choose add or remove"),
    ):
        got = prof.post(STAFF, data={**form, **fields})
        assert got.status_code == status and said in unescape(got.text), (fields, got.status_code, got.text[:1500])
    assert site.staff() == {"prof", "tara"}

    added = prof.post(STAFF, data={**form, "action": "add", "login": "bob"})
    assert added.status_code == 303 and "staff_added=bob" in added.headers["location"]
    assert site.staff() == {"prof", "tara", "bob"}
    assert "bob is now a TA of this course." in prof.get(added.headers["location"]).text
    bob, bob_csrf = site.browser("bob")
    assert bob.get(f"{REGRADES}?course={COURSE}").status_code == 200  # a TA now: the staff pages open
    site.grader.report = FIXED
    set_id = _preview(site, bob, bob_csrf, all_versions="1")
    _ready(bob, set_id)
    assert bob.post(f"{REGRADES}/{set_id}/cancel", data={"csrf": bob_csrf, "course": COURSE}).status_code == 303

    removed = prof.post(STAFF, data={**form, "action": "remove", "login": "bob"})
    assert removed.status_code == 303 and "staff_removed=bob" in removed.headers["location"]
    assert site.staff() == {"prof", "tara"}
    assert bob.get(f"{REGRADES}?course={COURSE}").status_code == 404  # at once, in the session they had
    assert bob.get(f"{REGRADES}/{set_id}?course={COURSE}").status_code == 404
    bob_id, prof_id = site.user_id("bob"), site.user_id("prof")
    assert [e for e in site.events() if "bob" in (e[0], e[3]) or e[2] == "regrade.cancel"] == [
        ("prof", prof_id, "staff.add", "bob"),
        ("bob", bob_id, "regrade.cancel", f"regrade {set_id} (actor-loss)"),  # what bob did stays, with his account
        ("prof", prof_id, "staff.remove", "bob"),
    ]
    log = prof.get(f"/dashboard?course={COURSE}").text
    assert '<tr data-action="regrade.cancel"><td>' in log and "<td>bob</td><td>regrade.cancel</td>" in log
