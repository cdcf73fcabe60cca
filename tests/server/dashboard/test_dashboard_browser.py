"""The dashboard in Debian's headless Chromium (Playwright) against a real `ppo-grader serve`
that grades real submissions in the jail: an instructor reads the charts, follows a
named mistake to its learners and opens a submission; a learner sees only their own pages;
a page reloads by itself when a verdict arrives. Screenshots go to the test's tmp folder."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import httpx
import pytest

from exercises.registry import get_exercise
from tests.e2e.conftest import Server, server  # noqa: F401  (the real-server fixture)
from tests.server.dashboard.test_web import CHROMIUM, CHROMIUM_ARGS, _api_submit, _api_user, _wait_done

TITLE = "PPO clipped actor loss"


def _api(server: Server, path: str) -> dict:  # type: ignore[type-arg]  # noqa: F811
    response = httpx.get(f"{server.url}/api/v1{path}", headers={"Authorization": f"Bearer {server.instructor_token}"}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def _shown(label: str) -> str:
    """A bar's label as drawn (long ones are cut at 120 characters; the tooltip has it all)."""
    return label if len(label) <= 120 else label[:119] + "…"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_chromium_reads_the_dashboard_and_learners_see_only_their_own(server: Server, tmp_path: Path) -> None:  # noqa: F811
    assert os.access(CHROMIUM, os.X_OK) and shutil.which("chromium"), "Debian's chromium is needed (apt-get install chromium)"
    from playwright import sync_api

    exercise = get_exercise("actor-loss")
    mutant = next(m for m in exercise.mistakes if m.key == "max-for-min").source(exercise.function_name)
    seeded = [  # graded 100; two learners with the same mistake
        ("dash-grace", "Grace Hopper", exercise.reference_source),
        ("dash-alan", "Alan <Turing>", mutant),
        ("dash-ada", "Ada Lovelace", mutant),
    ]
    tokens = {name: _api_user(server, name, display) for name, display, _ in seeded}
    ids = {name: _api_submit(server, tokens[name], source) for name, _, source in seeded}
    deadline = time.monotonic() + 600
    results = {name: _wait_done(server, tokens[name], ids[name], deadline) for name in ids}
    assert results["dash-grace"]["score"] == 100, results
    named = {c["mistake_title"] for c in results["dash-alan"]["checks"] if c["mistake_title"]}
    assert len(named) == 1, results["dash-alan"]
    [mistake] = named

    stats = _api(server, "/exercises/actor-loss/stats")  # the same data, as the API says it
    errors: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            page.set_default_timeout(30_000)
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)

            # Log in as the instructor: the class page, with the top mistake called out.
            page.goto(f"{server.url}/dashboard")
            page.fill("#token", server.instructor_token)
            page.click("button[type=submit]")
            page.wait_for_selector("table#exercises")
            assert page.url == f"{server.url}/dashboard"
            page.screenshot(path=str(tmp_path / "class.png"), full_page=True)

            # Click 1: the exercise page. Count the bars and read their labels.
            page.click(f"table#exercises a:has-text('{TITLE}')")
            page.wait_for_selector("svg#chart-scores")
            assert page.locator("h1").inner_text() == TITLE
            score_bars = page.locator("svg#chart-scores g.bar")
            assert score_bars.count() == 11
            assert [score_bars.nth(i).get_attribute("data-value") for i in range(11)] == [
                str(b["learners"]) for b in stats["score_distribution"]
            ]
            assert page.locator("svg#chart-scores text.label").all_text_contents()[-1] == "100"
            check_bars = page.locator("svg#chart-checks g.bar")
            assert check_bars.count() == len(stats["checks"])
            assert page.locator("svg#chart-checks text.label").all_text_contents() == [_shown(c["name"]) for c in stats["checks"]]
            labels = page.locator("svg#chart-mistakes text.label").all_text_contents()
            assert labels == [_shown(m["mistake_title"]) for m in stats["mistakes"]] and mistake in labels
            values = page.locator("svg#chart-mistakes text.value").all_text_contents()
            ours = next(m for m in stats["mistakes"] if m["mistake_title"] == mistake)
            assert values[labels.index(mistake)] == f"{ours['learners']} learner" + ("s" if ours["learners"] != 1 else "")
            page.screenshot(path=str(tmp_path / "exercise.png"), full_page=True)

            # Click 2: the mistake's bar: who holds it.
            page.locator(f"svg#chart-mistakes g.bar[data-label='{mistake}'] a").click()
            page.wait_for_selector("table#holders")
            holders = page.locator("table#holders tbody td.learner").all_inner_texts()
            assert {"Alan <Turing>", "Ada Lovelace"} <= set(holders) and "Grace Hopper" not in holders
            page.screenshot(path=str(tmp_path / "holders.png"), full_page=True)

            # Open Alan's submission from there: feedback as ppo-submit prints it, and the source.
            row = page.locator("table#holders tbody tr", has_text="Alan <Turing>")
            row.locator(f"a:has-text('#{ids['dash-alan']}')").click()
            page.wait_for_selector("#feedback")
            assert page.locator("h1").inner_text() == f"Submission #{ids['dash-alan']}"
            assert f"Likely mistake: {mistake}" in page.locator("#feedback").inner_text()
            assert "def compute_actor_loss" in page.locator("#source").inner_text()
            page.screenshot(path=str(tmp_path / "submission.png"), full_page=True)

            # A learner logs in and lands on their own page, with their own submission.
            learner = browser.new_context(viewport={"width": 1280, "height": 900})
            mine = learner.new_page()
            mine.set_default_timeout(30_000)
            mine.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            mine.goto(f"{server.url}/login")
            mine.fill("#token", tokens["dash-ada"])
            mine.click("button[type=submit]")
            mine.wait_for_selector("table#learner-exercises")
            assert mine.url == f"{server.url}/dashboard/learners/dash-ada"
            assert mine.locator("h1").inner_text() == "Your work"
            assert mine.locator(f"table.submissions a:has-text('#{ids['dash-ada']}')").count() == 1
            mine.screenshot(path=str(tmp_path / "learner.png"), full_page=True)

            # Live: a new verdict shows up on the open page without anyone reloading it.
            newer = _api_submit(server, tokens["dash-ada"], exercise.reference_source)
            mine.wait_for_selector(f"table.submissions a:has-text('#{newer}')", timeout=120_000)
            _wait_done(server, tokens["dash-ada"], newer, time.monotonic() + 300)
            mine.wait_for_function(
                "id => [...document.querySelectorAll('table.submissions tr')].some("
                "r => r.textContent.includes('#' + id) && r.textContent.includes('graded'))",
                arg=newer, timeout=120_000,
            )

            # Nothing of anyone else's: other learners' pages and submissions, the class pages.
            for path in ["/dashboard/learners/dash-alan", f"/dashboard/submissions/{ids['dash-alan']}",
                         "/dashboard/exercises/actor-loss", "/dashboard/learners"]:
                response = mine.goto(f"{server.url}{path}")
                assert response is not None and response.status == 404, path
                assert mine.locator("h1").inner_text() == "Not found"
                assert "Alan" not in mine.content()
            board = mine.goto(f"{server.url}/leaderboard")  # the course's board: classmates by pseudonym
            assert board is not None and board.status == 200 and "Alan" not in mine.content()
            mine.goto(f"{server.url}/dashboard")
            assert mine.url == f"{server.url}/dashboard/learners/dash-ada"
        finally:
            browser.close()
    assert not [m for m in errors if "Content Security Policy" in m or "Refused" in m], errors
    for name in ("class", "exercise", "holders", "submission", "learner"):
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000
    print(f"screenshots: {tmp_path}")
