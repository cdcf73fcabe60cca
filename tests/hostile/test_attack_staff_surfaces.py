"""A white-box red team of the staff and review surfaces (human review, regrades in the browser,
the course page's staff section, bulk CSV corrections, the assignments page, the audit log,
scoped tokens), driven over real HTTP against a real uvicorn (``tests.server.live_server``, the
fake grader) on SQLite or the local PostgreSQL.

Each test asserts what a safe service does; each was ``xfail(strict=True)`` while the attack
worked (branch staff-attack), and is a plain test since its fix (branch staff-fix). What held (no test here): IDOR
on submission, request and regrade ids across courses; learners and another course's TAs on
staff forms and routes; a TA changing staff; a removed TA's cookie and token; CSRF (no token,
another session's token, a foreign or ``null`` Origin, text/plain or JSON bodies); stored XSS
through comments, answers, messages, reasons, CSV cells and logins; formulas in gradebook
exports; hidden-until-due leaks of comments and overrides; read-only and course-limited tokens
(method override, repeated, nested, escaped or BOM-prefixed ``course`` keys, chunked bodies);
the per-learner cap on open requests under a burst; regrade apply and cancel at once; regrade
previews naming another course's submission or learner; hostile query parameters on the pages.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from server.app import create_app
from server.config import Settings
from server.courses.service import INSTRUCTOR, enroll
from server.db import transaction
from server.models import AuditEvent, Course, ReviewComment, Role, ScoreCorrection, Submission, User, utcnow
from server.review.service import MAX_COMMENTS_PER_SUBMISSION
from server.users.service import create_user
from server.web.session import COOKIE_NAME, form_token
from tests.pg import pg_database, pg_url  # noqa: F401  (fixtures)
from tests.server.conftest import wait_graded
from tests.server.fakes import FakeGrader
from tests.server.live_server import live_server

pytestmark = pytest.mark.slow

#: prof teaches ``ca`` (ta is its TA, ann its learner); profb teaches ``cb`` (tb, bob).
PEOPLE = (("prof", Role.INSTRUCTOR), ("profb", Role.INSTRUCTOR), ("ta", Role.LEARNER), ("tb", Role.LEARNER),
          ("ann", Role.LEARNER), ("bob", Role.LEARNER))


@dataclass
class World:
    """A served app with two courses, their staff and learners; API and browser helpers."""

    url: str
    settings: Settings
    factory: Any
    tokens: dict[str, str] = field(default_factory=dict)
    clients: list[httpx.Client] = field(default_factory=list)

    def api(self, method: str, path: str, who: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.tokens[who]}", **kwargs.pop("headers", {})}
        return httpx.request(method, f"{self.url}/api/v1{path}", headers=headers, timeout=60, **kwargs)

    def browser(self, who: str) -> tuple[httpx.Client, str]:
        """A logged-in browser of ``who`` and its form token."""
        client = httpx.Client(base_url=self.url, timeout=60)
        self.clients.append(client)
        assert client.post("/login", data={"token": self.tokens[who]}, follow_redirects=False).status_code == 303
        return client, form_token(client.cookies.get(COOKIE_NAME) or "", self.settings.secret_bytes)

    def graded(self, who: str = "ann", course: str = "ca") -> int:
        """A submission of ``who`` in ``course``, once graded."""
        sent = self.api("POST", "/submissions", who,
                        json={"exercise": "actor-loss", "source": "import math\nloss = 1\n", "course": course})
        assert sent.status_code == 202, sent.text
        number = int(sent.json()["id"])
        wait_graded(self.url, self.tokens[who], number)
        return number

    def request(self, submission: int, who: str = "ann") -> int:
        """An open review request of ``submission`` by its learner."""
        made = self.api("POST", f"/submissions/{submission}/review-requests", who, json={"message": "look"})
        assert made.status_code == 201, made.text
        return int(made.json()["id"])


@contextmanager
def _world(url: str) -> Iterator[World]:
    settings = Settings(DATABASE_URL=url, WORKERS=1)
    app = create_app(settings, FakeGrader().factory)
    with live_server(app) as base:
        world = World(base, settings, app.state.grader.session_factory)
        with transaction(world.factory) as session:
            for name, role in PEOPLE:
                world.tokens[name] = create_user(session, name, role, settings.secret_bytes).token
        for who, slug in (("prof", "ca"), ("profb", "cb")):
            made = world.api("POST", "/courses", who, json={"slug": slug, "title": slug.upper(), "time_zone": "UTC"})
            assert made.status_code == 201, made.text
            assert world.api("PUT", f"/courses/{slug}/exercises/actor-loss", who, json={}).status_code == 200
        with transaction(world.factory) as session:
            users = {u.name: u for u in session.scalars(select(User))}
            courses = {c.slug: c for c in session.scalars(select(Course))}
            for slug, staff, learner in (("ca", "ta", "ann"), ("cb", "tb", "bob")):
                enroll(session, courses[slug], users[staff], INSTRUCTOR)
                enroll(session, courses[slug], users[learner])
        try:
            yield world
        finally:
            for client in world.clients:
                client.close()


@pytest.fixture
def sqlite_world(tmp_path: Path) -> Iterator[World]:
    """The world on a fresh SQLite file (the default backend)."""
    with _world(f"sqlite:///{tmp_path / 'grader.db'}") as world:
        yield world


@pytest.fixture
def pg_world(pg_url: str) -> Iterator[World]:  # noqa: F811  (the fixture imported above)
    """The world on the local PostgreSQL (skipped where it is unreachable)."""
    with _world(pg_url) as world:
        yield world


# --- hostile input that becomes a 500 -------------------------------------------------------


@pytest.mark.postgres
def test_a_nul_in_the_override_reason_of_an_answer_is_a_named_refusal(pg_world: World) -> None:
    """The answer itself is checked for NUL (``clean_text``); its ``reason`` goes to
    ``corrections.override`` as sent, and the audit row's insert fails on PostgreSQL."""
    request = pg_world.request(pg_world.graded())
    sent = pg_world.api("POST", f"/courses/ca/review-requests/{request}/answer", "ta",
                        content='{"answer": "ok", "score": 80, "reason": "a \\u0000 b"}',
                        headers={"Content-Type": "application/json"})
    assert sent.status_code == 422, sent.text


@pytest.mark.postgres
@pytest.mark.parametrize("form", ["override", "answer"])
def test_a_nul_in_the_reason_of_a_review_form_is_a_named_refusal(pg_world: World, form: str) -> None:
    submission = pg_world.graded()
    request = pg_world.request(submission)
    browser, csrf = pg_world.browser("ta")
    fields = {"csrf": csrf, "course": "ca", "score": "50", "reason": "a\x00b"}
    fields |= {"submission": str(submission)} if form == "override" else {"request": str(request), "answer": "fine"}
    sent = browser.post(f"/dashboard/reviews/{form}", data=fields, follow_redirects=False)
    assert sent.status_code in (400, 422), sent.status_code
    assert "text/html" in sent.headers["content-type"]


@pytest.mark.postgres
@pytest.mark.parametrize("form", ["comment", "override", "answer"])
def test_a_nul_in_the_course_of_a_review_form_is_the_404_page(pg_world: World, form: str) -> None:
    """``staff_form_course`` turns a NUL slug into the 404 page; the review forms call
    ``taught_course_named`` without that check."""
    submission = pg_world.graded()
    request = pg_world.request(submission)
    browser, csrf = pg_world.browser("ta")
    fields = {"csrf": csrf, "course": "ca\x00", "submission": str(submission), "request": str(request),
              "line": "1", "body": "x", "score": "1", "reason": "x", "answer": "x"}
    sent = browser.post(f"/dashboard/reviews/{form}", data=fields, follow_redirects=False)
    assert sent.status_code == 404, sent.status_code


def test_a_pasted_bulk_csv_over_the_cap_gets_the_named_413_page(sqlite_world: World) -> None:
    """A file over the cap gets the 413 page naming it; the same CSV pasted (a text part over
    ``max_part_size``) escapes as Starlette's ``HTTPException``, which the route's
    ``except (MultiPartException, fastapi.HTTPException)`` does not catch."""
    browser, csrf = sqlite_world.browser("ta")
    big = "learner,exercise,score,reason\n" + "".join(f"u{i},actor-loss,50,r\n" for i in range(20000))
    sent = browser.post("/dashboard/extensions/preview", data={"csrf": csrf, "course": "ca", "csv": big},
                        files={"file": ("", b"")})
    assert sent.status_code == 413, sent.status_code
    assert "text/html" in sent.headers["content-type"] and "KiB" in sent.text


# --- races ---------------------------------------------------------------------------------------


def test_staff_answering_one_request_at_once_make_one_answer_and_one_override(sqlite_world: World) -> None:
    """``course_request(lock=True)`` is ``SELECT ... FOR UPDATE``, which SQLite ignores: each
    of the answers read the request open, so each makes an override and an audit row."""
    for _ in range(3):
        request = sqlite_world.request(sqlite_world.graded())
        start = threading.Barrier(4)
        codes: list[int] = []

        def answer(who: str, score: int, request: int = request, start: threading.Barrier = start) -> None:
            start.wait()
            sent = sqlite_world.api("POST", f"/courses/ca/review-requests/{request}/answer", who,
                                    json={"answer": f"set to {score}", "score": score})
            codes.append(sent.status_code)

        threads = [threading.Thread(target=answer, args=a) for a in (("ta", 10), ("prof", 90), ("ta", 20), ("prof", 95))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(codes) == [200, 409, 409, 409], codes
    with transaction(sqlite_world.factory) as session:
        live = session.scalars(select(ScoreCorrection).where(ScoreCorrection.revoked_at.is_(None))).all()
        answers = [a for a in session.scalars(select(AuditEvent)) if a.action == "review.answer"]
        assert len(live) == 1 and len(answers) == 3


def test_a_burst_of_comments_stays_within_the_cap(sqlite_world: World) -> None:
    """``add_comment`` counts, then inserts, with nothing held between (PostgreSQL too: 207
    there as well): each comment of a burst at 195 reads a count under 200."""
    submission = sqlite_world.graded()
    with transaction(sqlite_world.factory) as session:
        found = session.get(Submission, submission)
        assert found is not None
        session.add_all(
            ReviewComment(submission_id=submission, course_id=found.course_id, line=1, body=f"c{i}", author="ta",
                          created_at=utcnow())
            for i in range(MAX_COMMENTS_PER_SUBMISSION - 5)
        )
    start = threading.Barrier(12)

    def comment(i: int) -> None:
        start.wait()
        sqlite_world.api("POST", f"/submissions/{submission}/comments", "ta" if i % 2 else "prof",
                         json={"line": 1, "body": f"burst {i}"})

    threads = [threading.Thread(target=comment, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    comments = sqlite_world.api("GET", f"/submissions/{submission}/review", "ta").json()["comments"]
    assert len(comments) <= MAX_COMMENTS_PER_SUBMISSION, len(comments)


# --- what a page shows ----------------------------------------------------------------------


def test_a_link_cannot_make_the_course_page_announce_a_staff_change(sqlite_world: World) -> None:
    """The notice after the staff form is drawn from ``?staff_added=`` / ``?staff_removed=``,
    so any page may link an instructor to "profb is no longer staff of this course"."""
    browser, _ = sqlite_world.browser("prof")
    page = browser.get("/dashboard", params={"course": "ca", "staff_removed": "profb", "staff_added": "mallory"})
    assert page.status_code == 200
    assert "is no longer staff of" not in page.text and "is now a TA of" not in page.text


def test_a_comment_of_invisible_characters_only_is_refused(sqlite_world: World) -> None:
    """``clean_text`` removes control characters and blank space but keeps format characters
    (U+200B, U+2060, U+FEFF): a comment the learner cannot see is stored, counted and audited."""
    submission = sqlite_world.graded()
    sent = sqlite_world.api("POST", f"/submissions/{submission}/comments", "ta",
                            json={"line": 1, "body": "\u200b\u2060\ufeff"})
    assert sent.status_code == 422, sent.text
