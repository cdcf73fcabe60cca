"""Human review in Debian's headless Chromium (Playwright), against the app served by a real
uvicorn (``tests.server.live_server``, the fake grader): the learner asks for a review from her
submission's page; the TA finds it from the course's Reviews page, comments on a line and
answers it with an override; the learner's page shows the comment, the answer and the score
that counts now. Screenshots go to the test's tmp folder."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from server.app import create_app
from server.config import Settings
from server.courses.service import INSTRUCTOR, enroll
from server.db import transaction
from server.models import Course, Role, User
from server.users.service import create_user
from tests.server.dashboard.test_web import CHROMIUM, CHROMIUM_ARGS
from tests.server.fakes import FakeGrader
from tests.server.live_server import live_server

COURSE = "review-36"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_ta_comments_and_answers_with_an_override_in_chromium(
    settings: Settings, grader: FakeGrader, tmp_path: Path
) -> None:
    assert os.access(CHROMIUM, os.X_OK) and shutil.which("chromium"), "Debian's chromium is needed (apt-get install chromium)"
    from playwright import sync_api

    app = create_app(settings, grader.factory)
    with live_server(app) as url:
        factory = app.state.grader.session_factory
        with transaction(factory) as session:
            prof = create_user(session, "prof", Role.INSTRUCTOR, settings.secret_bytes).token
            ann = create_user(session, "ann", Role.LEARNER, settings.secret_bytes).token
            tara = create_user(session, "tara", Role.LEARNER, settings.secret_bytes).token

        def api(method: str, path: str, token: str = prof, **kwargs: object) -> httpx.Response:
            return httpx.request(method, f"{url}/api/v1{path}", headers={"Authorization": f"Bearer {token}"},
                                 timeout=30, **kwargs)  # type: ignore[arg-type]

        assert api("POST", "/courses", json={"slug": COURSE, "title": "Review", "time_zone": "UTC"}).status_code == 201
        with transaction(factory) as session:
            course = session.scalar(select(Course).where(Course.slug == COURSE))
            assert course is not None
            for name, role in (("ann", "learner"), ("tara", INSTRUCTOR)):
                user = session.scalar(select(User).where(User.name == name))
                assert user is not None
                enroll(session, course, user, role)
        assert api("PUT", f"/courses/{COURSE}/exercises/actor-loss", json={}).status_code == 200
        source = "import math\nloss = math.nan\n"
        sent = api("POST", "/submissions", ann, json={"exercise": "actor-loss", "source": source, "course": COURSE})
        assert sent.status_code == 202, sent.text
        sub = sent.json()["id"]
        deadline = time.monotonic() + 60
        while api("GET", f"/submissions/{sub}", ann).json()["status"] != "done":
            assert time.monotonic() < deadline
            time.sleep(0.1)

        def counted() -> float:
            scores = api("GET", f"/courses/{COURSE}/scores", ann).json()["scores"]
            return float(next(s["counted_score"] for s in scores if s["exercise"] == "actor-loss"))

        assert counted() == 75

        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                learner = browser.new_context().new_page()
                learner.set_default_timeout(30_000)
                learner.goto(f"{url}/dashboard/submissions/{sub}")
                learner.fill("#token", ann)
                learner.click("button[type=submit]")
                learner.fill("#r-message", "Line 2 is on purpose: is NaN really wrong?")
                learner.click("#request-form button[type=submit]")
                learner.wait_for_selector("#review-requests li.request[data-state=open]")
                assert learner.query_selector("#request-form") is None  # one open request at a time

                staff = browser.new_context().new_page()
                staff.set_default_timeout(30_000)
                staff.goto(f"{url}/dashboard?course={COURSE}")
                staff.fill("#token", tara)
                staff.click("button[type=submit]")
                staff.click("nav a:has-text('Reviews')")
                staff.wait_for_selector("#open-requests")
                assert "is NaN really wrong?" in staff.inner_text("#open-requests")
                staff.screenshot(path=str(tmp_path / "queue.png"), full_page=True)
                staff.click("#open-requests a:has-text('Answer')")
                staff.wait_for_selector("#comment-form")
                staff.fill("#c-line", "2")
                staff.fill("#c-body", "NaN is never a loss: return a number.")
                staff.click("#comment-form button[type=submit]")
                staff.wait_for_selector("#review-comments li.comment[data-line='2']")
                form = staff.wait_for_selector("form.answer-form")
                request_id = (form.get_attribute("id") or "").removeprefix("answer-")
                staff.fill(f"#a-text-{request_id}", "Fair: the check is too strict here. 90 by hand.")
                staff.fill(f"#a-score-{request_id}", "90")
                staff.click(f"#answer-{request_id} button[type=submit]")
                staff.wait_for_selector("#review-requests li.request[data-state=resolved]")
                staff.screenshot(path=str(tmp_path / "staff.png"), full_page=True)

                learner.reload()
                comment = learner.wait_for_selector("#review-comments li.comment[data-line='2']")
                assert "NaN is never a loss" in comment.inner_text() and "loss = math.nan" in comment.inner_text()
                answer = learner.inner_text("#review-requests li.request[data-state=resolved]")
                assert "90 by hand." in answer and "the score that counts is now 90" in answer
                learner.screenshot(path=str(tmp_path / "learner.png"), full_page=True)
                learner.goto(f"{url}/dashboard/reviews?course={COURSE}")
                assert "Not found" in learner.inner_text("h1")  # the staff's page is a 404 to her
            finally:
                browser.close()
        assert counted() == 90
        actions = [a for a in api("GET", f"/courses/{COURSE}/scores", ann).json()["scores"] if a["override"]]
        assert actions and actions[0]["override"]["score"] == 90
