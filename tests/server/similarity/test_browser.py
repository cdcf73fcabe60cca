"""The similarity pages in Debian's headless Chromium against a real ``ppo-grader serve``:
learners submit with the real ``ppo-submit``, the real jail grades, the instructor presses
"Compare now", reads the ranking, opens the top pair side by side and marks it; a learner
gets the not-found page. Screenshots go to the test's tmp folder."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import Server, server  # noqa: F401  (the real-server fixture)
from tests.server.dashboard.test_web import CHROMIUM, CHROMIUM_ARGS
from tests.server.similarity.conftest import corpus

LEARNERS = ("l03", "l28", "l07", "l29", "l05", "l13")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_chromium_compares_a_course_and_marks_a_pair(server: Server, tmp_path: Path) -> None:  # noqa: F811
    assert os.access(CHROMIUM, os.X_OK) and shutil.which("chromium"), "Debian's chromium is needed (apt-get install chromium)"
    from playwright import sync_api

    prof = {"Authorization": f"Bearer {server.instructor_token}"}
    assert httpx.post(f"{server.url}/api/v1/courses", json={"slug": "sim-b", "title": "Section B"}, headers=prof).status_code == 201
    assert httpx.put(f"{server.url}/api/v1/courses/sim-b/exercises/kl-penalty", json={}, headers=prof).status_code == 200
    roster = "name,display_name\n" + "".join(f"sim-{n},Learner {n.upper()}\n" for n in LEARNERS)
    rows = httpx.post(f"{server.url}/api/v1/courses/sim-b/roster", content=roster.encode(),
                      headers={**prof, "Content-Type": "text/csv"}, timeout=30).json()["rows"]
    tokens = {row["name"]: row["token"] for row in rows}
    files = corpus()
    for name in LEARNERS:
        path = tmp_path / f"{name}.py"
        path.write_text(files[name])
        done = server.submit(tokens[f"sim-{name}"], str(path), "--course", "sim-b", "--yes", timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr  # graded 100

    errors: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
            page.set_default_timeout(30_000)
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(f"{server.url}/dashboard/similarity?course=sim-b")
            page.fill("#token", server.instructor_token)
            page.click("button[type=submit]")
            page.wait_for_selector("text=Not compared yet")
            page.click("button:has-text('Compare now')")
            deadline = time.monotonic() + 120
            while page.locator("table#similar-pairs").count() == 0:
                assert time.monotonic() < deadline, page.content()[-2000:]
                time.sleep(0.5)
                page.reload()
            first_rows = page.locator("table#similar-pairs tbody tr")
            top = {first_rows.nth(i).locator("td").nth(1).inner_text().split(" (")[1].rstrip(")") for i in range(2)}
            assert top == {"sim-l03 / sim-l28", "sim-l07 / sim-l29"}, top
            page.screenshot(path=str(tmp_path / "similarity.png"), full_page=True)

            first_rows.nth(0).locator("a").click()
            page.wait_for_selector(".side")
            assert page.locator(".side pre").count() == 2
            assert page.locator(".side pre span.match").count() >= 16
            learner_links = page.locator("p a[href^='/dashboard/learners/']")
            assert learner_links.count() == 2
            page.click("button:has-text('Reviewed: concern')")
            page.wait_for_selector(".mark-concern")
            page.screenshot(path=str(tmp_path / "pair.png"), full_page=True)
            page.goto(f"{server.url}/dashboard/similarity?course=sim-b")
            assert "reviewed: concern" in page.locator("table#similar-pairs tbody tr").nth(0).inner_text()

            learner = browser.new_context().new_page()
            learner.goto(f"{server.url}/login")
            learner.fill("#token", tokens["sim-l28"])
            learner.click("button[type=submit]")
            learner.wait_for_load_state()
            answer = learner.goto(f"{server.url}/dashboard/similarity?course=sim-b")
            assert answer is not None and answer.status == 404
            assert "sim-l03" not in learner.content()
        finally:
            browser.close()
    assert not errors, errors
