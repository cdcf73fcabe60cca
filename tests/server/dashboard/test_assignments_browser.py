"""The assignments and regrades pages in Debian's headless Chromium (Playwright), against the app
served by a real uvicorn (``tests.server.live_server``, the fake grader): a TA moves a due date
through the page, reads how many counted scores change, confirms, and the learner's page shows
the new date and the re-priced score; then the TA previews a regrade, reads its diff, applies it
with a reason, and the learner's submission page shows the reason and the new counted score.
Screenshots go to the test's tmp folder."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from server.app import create_app
from server.config import Settings
from server.courses.service import INSTRUCTOR
from server.models import Role
from tests.server.conftest import (
    browser_login,
    enroll_named,
    preview_regrade_in_browser,
    served_api,
    user_tokens,
    wait_graded,
)
from tests.server.dashboard.test_web import CHROMIUM, CHROMIUM_ARGS
from tests.server.fakes import FakeGrader, FakeReport
from tests.server.live_server import live_server

COURSE = "browser-36"
ZONE = "Europe/Paris"


def _local(moment: datetime) -> str:
    return f"{moment.astimezone(ZoneInfo(ZONE)):%Y-%m-%dT%H:%M:%S}"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_ta_moves_a_due_date_and_applies_a_regrade_in_chromium(settings: Settings, grader: FakeGrader, tmp_path: Path) -> None:
    assert os.access(CHROMIUM, os.X_OK) and shutil.which("chromium"), "Debian's chromium is needed (apt-get install chromium)"
    from playwright import sync_api

    app = create_app(settings, grader.factory)
    now = datetime.now(UTC).replace(microsecond=0)
    old_due, new_due = now - timedelta(hours=2), now + timedelta(days=2)
    with live_server(app) as url:
        factory = app.state.grader.session_factory
        tokens = user_tokens(factory, settings.secret_bytes,
                             (("prof", Role.INSTRUCTOR), ("ann", Role.LEARNER), ("tara", Role.LEARNER)))
        prof, ann, tara = tokens["prof"], tokens["ann"], tokens["tara"]

        def api(method: str, path: str, token: str = prof, **kwargs: Any) -> httpx.Response:
            return served_api(url, token, method, path, **kwargs)

        assert api("POST", "/courses", json={"slug": COURSE, "title": "Browser", "time_zone": ZONE}).status_code == 201
        enroll_named(factory, [(COURSE, "ann", "learner"), (COURSE, "tara", INSTRUCTOR)])
        rules = {"release_at": (now - timedelta(days=1)).isoformat(), "due_at": old_due.isoformat(),
                 "penalty_percent": 10}
        assert api("PUT", f"/courses/{COURSE}/exercises/actor-loss", json=rules).status_code == 200
        sent = api("POST", "/submissions", ann, json={"exercise": "actor-loss", "source": "x = 1\n", "course": COURSE})
        assert sent.status_code == 202, sent.text
        done = wait_graded(url, ann, sent.json()["id"])
        assert done["counted_score"] == 67.5  # 75 less 10%: a started day late

        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                page = browser_login(browser, f"{url}/dashboard?course={COURSE}", tara)
                page.click("nav a:has-text('Assignments')")
                page.wait_for_selector("#set-actor-loss")
                page.fill("#f-actor-loss-due", _local(new_due))
                page.click("#set-actor-loss form.publish button[type=submit]")
                count = page.wait_for_selector("#reprice-count")
                assert count.get_attribute("data-counted") == "1"
                assert "1 submission' counted score would change" in count.inner_text()
                page.screenshot(path=str(tmp_path / "confirm.png"), full_page=True)
                page.click("button:has-text('Confirm and apply')")
                page.wait_for_selector("p.notice[role=status]")
                assert "1 counted scores changed" in page.inner_text("p.notice[role=status]")
                page.screenshot(path=str(tmp_path / "assignments.png"), full_page=True)

                learner = browser.new_context().new_page()
                learner.goto(f"{url}/dashboard")
                learner.fill("#token", ann)
                learner.click("button[type=submit]")
                due = learner.wait_for_selector("td.due time")
                assert due.inner_text().startswith(_local(new_due).replace("T", " "))
                learner.screenshot(path=str(tmp_path / "learner.png"), full_page=True)

                # The grader is fixed (the clip check passes now): the TA regrades from the browser.
                grader.report = FakeReport(score=100.0, checks=[
                    c if c.passed else type(c)(c.name, c.weight, True, "ok", None, check_id=c.check_id)
                    for c in FakeReport().checks])
                preview_regrade_in_browser(page, "actor-loss")
                assert "1 up, 0 down" in page.inner_text("#regrade-counts")
                page.fill("#regrade-reason", "The clip check was too strict.")
                page.screenshot(path=str(tmp_path / "regrade.png"), full_page=True)
                page.click("#regrade-apply button[type=submit]")
                page.wait_for_selector("p.notice[role=status]")
                assert "applied" in page.inner_text("#regrade-state")

                learner.goto(f"{url}/dashboard/submissions/{done['id']}")
                regraded = learner.wait_for_selector("#regrades")
                assert "The clip check was too strict." in regraded.inner_text()
                assert "(counts 100)" in regraded.inner_text()
                learner.screenshot(path=str(tmp_path / "learner-regraded.png"), full_page=True)
            finally:
                browser.close()
    assert api_after(settings, done["id"]) == 100.0


def api_after(settings: Settings, submission_id: int) -> float | None:
    """The submission's counted score as stored, read after the server stopped."""
    from server.db import make_engine, make_session_factory
    from server.models import Submission

    engine = make_engine(settings.DATABASE_URL)
    try:
        with make_session_factory(engine)() as session:
            row = session.get(Submission, submission_id)
            return None if row is None else row.counted_score
    finally:
        engine.dispose()
