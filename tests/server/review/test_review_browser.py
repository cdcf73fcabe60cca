"""Human review in Debian's headless Chromium (Playwright), against the app served by a real
uvicorn (``tests.server.live_server``, the fake grader): the learner asks for a review from her
submission's page; the TA finds it from the course's Reviews page, comments on a line and
answers it with an override; the learner's page shows the comment, the answer and the score
that counts now. Screenshots go to the test's tmp folder."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from server.app import create_app
from server.config import Settings
from server.courses.service import INSTRUCTOR
from server.models import Role
from tests.server.conftest import answer_in_browser, browser_login, enroll_named, served_api, user_tokens, wait_graded
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
        tokens = user_tokens(factory, settings.secret_bytes,
                             (("prof", Role.INSTRUCTOR), ("ann", Role.LEARNER), ("tara", Role.LEARNER)))
        prof, ann, tara = tokens["prof"], tokens["ann"], tokens["tara"]

        def api(method: str, path: str, token: str = prof, **kwargs: Any) -> httpx.Response:
            return served_api(url, token, method, path, **kwargs)

        assert api("POST", "/courses", json={"slug": COURSE, "title": "Review", "time_zone": "UTC"}).status_code == 201
        enroll_named(factory, [(COURSE, "ann", "learner"), (COURSE, "tara", INSTRUCTOR)])
        assert api("PUT", f"/courses/{COURSE}/exercises/actor-loss", json={}).status_code == 200
        source = "import math\nloss = math.nan\n"
        sent = api("POST", "/submissions", ann, json={"exercise": "actor-loss", "source": source, "course": COURSE})
        assert sent.status_code == 202, sent.text
        sub = sent.json()["id"]
        wait_graded(url, ann, sub)

        def counted() -> float:
            scores = api("GET", f"/courses/{COURSE}/scores", ann).json()["scores"]
            return float(next(s["counted_score"] for s in scores if s["exercise"] == "actor-loss"))

        assert counted() == 75

        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                learner = browser_login(browser, f"{url}/dashboard/submissions/{sub}", ann)
                learner.fill("#r-message", "Line 2 is on purpose: is NaN really wrong?")
                learner.click("#request-form button[type=submit]")
                learner.wait_for_selector("#review-requests li.request[data-state=open]")
                assert learner.query_selector("#request-form") is None  # one open request at a time

                staff = browser_login(browser, f"{url}/dashboard?course={COURSE}", tara)
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
                answer_in_browser(staff, "Fair: the check is too strict here. 90 by hand.", "90")
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
