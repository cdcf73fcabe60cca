"""A browser-only learner's course in Debian's headless Chromium (Playwright), against a real
`ppo-grader serve` that grades in the real jail (issue 34): the learner's page lists each
exercise's dates in the course's zone and its feedback policy; the starters download as ``.py``
and ``.ipynb``; an upload past the due date asks first and is sent only once confirmed; a file
that does not parse is shown with its line and caret under ``hidden-until-due``; the course's
board is one click away, classmates by pseudonym. Screenshots go to the test's tmp folder."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest

from exercises.registry import get_exercise
from tests.e2e.conftest import Server, server  # noqa: F401  (the real-server fixture)
from tests.server.dashboard.test_web import CHROMIUM, CHROMIUM_ARGS, _wait_done

COURSE = "walk-34"
ZONE = "America/New_York"
#: actor-loss, not parsable: line 3 has an unclosed parenthesis.
BROKEN = "import torch\n\ndef compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2:\n    return 0\n"


def _api(server: Server, method: str, path: str, token: str | None = None, **kwargs: object) -> httpx.Response:  # noqa: F811
    headers = {"Authorization": f"Bearer {token or server.instructor_token}", **kwargs.pop("headers", {})}  # type: ignore[dict-item]
    return httpx.request(method, f"{server.url}/api/v1{path}", headers=headers, timeout=30, **kwargs)  # type: ignore[arg-type]


def _local(moment: datetime) -> str:
    """A moment as the pages write it in the course's zone (``server.web.html.local_time``)."""
    at = moment.astimezone(ZoneInfo(ZONE))
    return f"{at:%Y-%m-%d %H:%M:%S} {at.tzname()}"


def _course(server: Server) -> tuple[dict[str, str], dict[str, datetime]]:  # noqa: F811
    """The course: actor-loss under hidden-until-due (due in a week), gae under full and past its
    due date by half a day (closing in a week, 10% a started day late); two learners. Their tokens, and the dates."""
    assert _api(server, "POST", "/courses", json={"slug": COURSE, "title": "Walk 34", "time_zone": ZONE}).status_code == 201
    roster = "name,display_name\nwalk-ann,Ann Walker\nwalk-bo,Bo Rivers\n"
    answer = _api(server, "POST", f"/courses/{COURSE}/roster", content=roster.encode(),
                  headers={"Content-Type": "text/csv"})
    assert answer.status_code == 200, answer.text
    tokens = {r["name"]: r["token"] for r in answer.json()["rows"]}
    now = datetime.now(UTC).replace(microsecond=0)
    dates = {"release": now - timedelta(days=3), "due": now + timedelta(days=7), "late_due": now - timedelta(hours=12),
             "close": now + timedelta(days=7)}
    hidden = {"release_at": dates["release"].isoformat(), "due_at": dates["due"].isoformat(),
              "feedback_policy": "hidden-until-due"}
    late = {"release_at": dates["release"].isoformat(), "due_at": dates["late_due"].isoformat(),
            "close_at": dates["close"].isoformat(), "penalty_percent": 10, "feedback_policy": "full"}
    for exercise, rules in (("actor-loss", hidden), ("gae", late)):
        published = _api(server, "PUT", f"/courses/{COURSE}/exercises/{exercise}", json=rules)
        assert published.status_code == 200, published.text
    return tokens, dates


def _graded_page(server: Server, page: object, token: str) -> None:  # noqa: F811
    """Once the upload's page is open, wait (through the API) for its verdict, then show it."""
    page.wait_for_url(re.compile(r".*/dashboard/submissions/\d+$"))  # type: ignore[attr-defined]
    submission_id = int(page.url.rsplit("/", 1)[1])  # type: ignore[attr-defined]
    assert _wait_done(server, token, submission_id, time.monotonic() + 300)["status"] == "done"
    page.reload()  # type: ignore[attr-defined]  # (the page also reloads itself when the verdict arrives)
    page.wait_for_selector("#feedback")  # type: ignore[attr-defined]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_browser_learner_walks_through_their_course(server: Server, tmp_path: Path) -> None:  # noqa: F811
    assert os.access(CHROMIUM, os.X_OK) and shutil.which("chromium"), "Debian's chromium is needed (apt-get install chromium)"
    from playwright import sync_api

    tokens, dates = _course(server)
    gae = get_exercise("gae")
    # a classmate on the board (sent through the API; it is late, the API does not ask)
    bos = _api(server, "POST", "/submissions", tokens["walk-bo"],
               json={"exercise": "gae", "source": gae.reference_source, "course": COURSE})
    assert bos.status_code == 202, bos.text
    assert _wait_done(server, tokens["walk-bo"], bos.json()["id"], time.monotonic() + 300)["verdict"] == "graded"
    starter = _api(server, "GET", "/exercises/actor-loss", tokens["walk-ann"]).json()["starter"]

    errors: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
            page = context.new_page()
            page.set_default_timeout(30_000)
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(f"{server.url}/login")
            page.fill("#token", tokens["walk-ann"])
            page.click("button[type=submit]")
            page.wait_for_selector("table#exercise-dates")
            assert page.locator("h1").inner_text() == "Your work"

            # 1. Dates in the course's zone, the late rule and the feedback policy of each exercise.
            assert f"(times in {ZONE})" in page.locator("#dates").inner_text()
            actor = page.locator("table#exercise-dates tr[data-exercise='actor-loss']")
            assert actor.locator("td.release").inner_text() == _local(dates["release"])
            assert actor.locator("td.due").inner_text() == _local(dates["due"])
            assert actor.locator("td.policy").inner_text().startswith("hidden-until-due:")
            late = page.locator("table#exercise-dates tr[data-exercise='gae']")
            assert late.get_attribute("data-status") == "late"
            assert late.locator("td.due").inner_text() == _local(dates["late_due"])
            assert late.locator("td.close").inner_text() == _local(dates["close"])
            assert late.locator("td.late-rule").inner_text() == "-10% of the score per day started late"
            page.screenshot(path=str(tmp_path / "learner.png"), full_page=True)

            # 2. The starter, as a .py file and as a notebook.
            with page.expect_download() as py:
                actor.locator("td.starter a", has_text=".py").click()
            assert py.value.suggested_filename == "actor_loss.py"
            assert Path(py.value.path()).read_text(encoding="utf-8") == starter
            with page.expect_download() as nb:
                actor.locator("td.starter a", has_text=".ipynb").click()
            assert nb.value.suggested_filename == "actor_loss.ipynb"
            cells = json.loads(Path(nb.value.path()).read_text(encoding="utf-8"))["cells"]
            assert any("def compute_actor_loss" in "".join(c["source"]) for c in cells)

            # 3. A late upload asks first: nothing is sent until the learner confirms.
            page.select_option("#upload-exercise", "gae")
            page.set_input_files("#upload-file", files=[{"name": "gae.py", "mimeType": "text/x-python",
                                                          "buffer": gae.reference_source.encode()}])
            page.click("#upload-form button[type=submit]")
            page.wait_for_selector("#late-notice")
            assert page.locator("h1").inner_text() == "Send it late?"
            notice = page.locator("#late-notice").inner_text()
            assert "gae was due on" in notice and "it loses 10% of its score" in notice
            mine = _api(server, "GET", f"/submissions?course={COURSE}", tokens["walk-ann"]).json()
            assert mine == []  # asked, not sent
            page.screenshot(path=str(tmp_path / "late-confirm.png"), full_page=True)
            page.click("#late-confirm button[type=submit]")
            _graded_page(server, page, tokens["walk-ann"])
            facts = page.locator("#submission-facts").inner_text()
            assert "-10%" in facts and page.locator("#submission-counted").inner_text() == "90"
            page.screenshot(path=str(tmp_path / "late-sent.png"), full_page=True)

            # 4. A syntax error under hidden-until-due is shown at once, with its line and caret.
            page.goto(f"{server.url}/dashboard/learners/walk-ann")
            page.select_option("#upload-exercise", "actor-loss")
            page.fill("#upload-source", BROKEN)
            page.click("#upload-form button[type=submit]")
            _graded_page(server, page, tokens["walk-ann"])
            feedback = page.locator("#feedback").inner_text()
            assert "Verdict: syntax_error" in feedback and "Received and graded" not in feedback
            snippet = page.locator("#feedback .fb-code").inner_text()
            assert "3 | def compute_actor_loss" in snippet and "^" in page.locator("#feedback .fb-caret").inner_text()
            assert "never reached a check" in page.locator("#feedback-policy").inner_text()
            page.screenshot(path=str(tmp_path / "syntax-error.png"), full_page=True)

            # 5. The course's board, from the learner's page: classmates by pseudonym, their own row marked.
            page.goto(f"{server.url}/dashboard/learners/walk-ann")
            page.click("#board-link a")
            page.wait_for_selector("table#board")
            board = _api(server, "GET", "/leaderboard", tokens["walk-ann"], params={"course": COURSE}).json()
            learners = page.locator("table#board tbody td.learner").all_inner_texts()
            assert [n.removesuffix(" (you)") for n in learners] == [e["learner"] for e in board["entries"]]
            assert sum(n.endswith(" (you)") for n in learners) == 1
            assert "Bo Rivers" not in page.content() and "walk-bo" not in page.content()
            assert "Walk 34" in page.locator("h1").inner_text()
            page.screenshot(path=str(tmp_path / "board.png"), full_page=True)
        finally:
            browser.close()
    assert not [m for m in errors if "Content Security Policy" in m or "Refused" in m], errors
    print(f"screenshots: {tmp_path}")
