"""Issue 25's acceptance: a course walked through the real parts, and every view agreeing.

A real ``ppo-grader serve`` (real jail and judge), the real ``ppo-grader`` and ``ppo-submit``
commands, the JSON API and Debian's headless Chromium (Playwright). One course, three
published exercises: a late submission (10% off per started day), an extension granted
afterwards (it re-prices the late one), an override and an excuse. Then the same learner's
score that counts is read from every view (the scores API as instructor and as learner,
``ppo-submit history --json`` and ``show``, ``ppo-grader scores list`` and
``courses gradebook``, both gradebooks over the API and the dashboard, the boards, the
statistics, the learner's page for the instructor and for the learner, the class page and
the HTML board), and they must all say the same; each page lists only the course's
exercises. ``UPDATE_SCREENSHOTS=1`` writes the class and learner pages (1400x1000) to
``docs/images/``; otherwise they go to the test's tmp folder.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from exercises.registry import get_exercise
from server.catalogue.service import list_exercises
from server.users.service import FIRST_INSTRUCTOR_NAME
from tests.e2e.conftest import BIN, Server
from tests.server.dashboard.test_web import CHROMIUM, CHROMIUM_ARGS

pytestmark = pytest.mark.slow

COURSE, TITLE = "walk-25", "RLHF, winter walk"
LATE, OVERRIDDEN, EXCUSED = "actor-loss", "gae", "kl-penalty"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "images"


def ppo_grader(server: Server, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(BIN / "ppo-grader"), *args], env=server.env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def api(server: Server, path: str, token: str, **params: str) -> httpx.Response:
    answer = httpx.get(f"{server.url}/api/v1{path}", params=params, headers={"Authorization": f"Bearer {token}"},
                       timeout=30)
    assert answer.status_code == 200, answer.text
    return answer


def counted_of(scores: list[dict], learner: str) -> dict[str, float | None]:  # type: ignore[type-arg]
    return {s["exercise"]: s["counted_score"] for s in scores if s["learner"] == learner}


def long_csv(text: str, learner: str) -> dict[str, float | None]:
    rows = [r for r in csv.DictReader(io.StringIO(text)) if r["learner"] == learner]
    return {r["exercise"]: float(r["counted_score"]) if r["counted_score"] else None for r in rows}


def wide_csv(text: str, learner: str, titles: dict[str, str]) -> dict[str, float | None]:
    row = next(r for r in csv.DictReader(io.StringIO(text)) if r["SIS Login ID"] == learner)
    return {slug: None if row[title] in ("", "EX") else float(row[title]) for slug, title in titles.items()}


@pytest.mark.timeout(1500)
def test_the_course_walk_every_view_gives_the_same_score_that_counts(server: Server, tmp_path: Path) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    slugs = [LATE, OVERRIDDEN, EXCUSED]
    titles = {e.slug: e.title for e in list_exercises() if e.slug in slugs}
    ppo_grader(server, "courses", "create", COURSE, "--title", TITLE, "--time-zone", "Europe/Paris",
               "--instructor", FIRST_INSTRUCTOR_NAME)
    ppo_grader(server, "sets", "publish", COURSE, LATE, "--release", (now - timedelta(days=3)).isoformat(),
               "--due", (now - timedelta(hours=2)).isoformat(), "--penalty", "10", "--per", "day")
    for slug in (OVERRIDDEN, EXCUSED):
        ppo_grader(server, "sets", "publish", COURSE, slug, "--due", (now + timedelta(days=7)).isoformat())
    roster = tmp_path / "roster.csv"
    roster.write_text("name,display_name\nwalk-ann,Ann Walker\nwalk-ben,Ben Walker\n")
    enrolled = ppo_grader(server, "courses", "enroll", COURSE, str(roster)).stdout.splitlines()[1:]
    tokens = {line.split(",")[0]: line.split(",")[-1] for line in enrolled}

    sources = {slug: get_exercise(slug).reference_source for slug in slugs}
    gae = get_exercise(OVERRIDDEN)
    sources["gae-wrong"] = gae.mistakes[0].source(gae.function_name)
    for name, text in sources.items():
        (tmp_path / f"{name}.py").write_text(text)

    def submit(learner: str, name: str, exercise: str) -> dict:  # type: ignore[type-arg]
        sent = server.submit(tokens[learner], str(tmp_path / f"{name}.py"), "-e", exercise, "--json", "--yes",
                             timeout=300)
        result = json.loads(sent.stdout)
        assert (result["course"], result["verdict"]) == (COURSE, "graded"), sent.stderr
        return result

    late = submit("walk-ann", LATE, LATE)
    assert (late["score"], late["late"], late["penalty_percent"], late["counted_score"]) == (100, True, 10, 90)
    wrong = submit("walk-ann", "gae-wrong", OVERRIDDEN)
    assert wrong["score"] < 95
    assert submit("walk-ann", EXCUSED, EXCUSED)["score"] == 100
    assert submit("walk-ben", LATE, LATE)["counted_score"] == 90  # late too, and not extended

    # The extension comes afterwards: it re-prices the late submission and says so.
    granted = ppo_grader(server, "extensions", "grant", COURSE, "walk-ann", LATE, "--due",
                         (now + timedelta(days=1)).isoformat())
    assert "recomputed the late penalty of 1 earlier submission" in granted.stderr
    override = ppo_grader(server, "scores", "override", COURSE, "walk-ann", OVERRIDDEN, "95", "--reason",
                          "the masking was right; graded by hand", "--by", FIRST_INSTRUCTOR_NAME)
    assert f"now 95 (override by {FIRST_INSTRUCTOR_NAME}:" in override.stderr
    excuse = ppo_grader(server, "scores", "excuse", COURSE, "walk-ann", EXCUSED, "--reason", "medical note",
                        "--by", FIRST_INSTRUCTOR_NAME)
    assert "now excused" in excuse.stderr
    expected = {LATE: 100.0, OVERRIDDEN: 95.0, EXCUSED: None}
    staff, ann = server.instructor_token, tokens["walk-ann"]

    # The API, as the instructor and as the learner (who reads who corrected what, and why).
    as_staff = api(server, f"/courses/{COURSE}/scores", staff, learner="walk-ann").json()["scores"]
    as_ann = api(server, f"/courses/{COURSE}/scores", ann).json()["scores"]
    assert counted_of(as_staff, "walk-ann") == counted_of(as_ann, "walk-ann") == expected
    shown = {s["exercise"]: s["described"] for s in as_ann}
    assert shown[LATE].startswith("100 (extended to ")
    assert shown[OVERRIDDEN].startswith(f"95 (override by {FIRST_INSTRUCTOR_NAME}:") and "graded by hand" in shown[OVERRIDDEN]
    assert shown[EXCUSED].startswith(f"excused (by {FIRST_INSTRUCTOR_NAME}:") and "medical note" in shown[EXCUSED]
    assert api(server, f"/submissions/{late['id']}", ann).json()["counted_score"] == 100  # re-priced

    # The learner's terminal: history --json and show.
    history = json.loads(server.submit(ann, "history", "--json").stdout)
    assert counted_of(history["scores"][0]["scores"], "walk-ann") == expected
    text = server.submit(ann, "history").stdout
    for slug in slugs:
        assert f"{slug}: {shown[slug]}" in " ".join(text.split())
    assert json.loads(server.submit(ann, "show", str(late["id"]), "--json").stdout)["counted_score"] == 100

    # The server's CLI: scores list and the gradebook.
    listed = ppo_grader(server, "scores", "list", COURSE, "--learner", "walk-ann").stdout
    for slug, value in expected.items():
        assert re.search(rf"{slug}\s+│?\s*{'excused' if value is None else f'{value:g}'}\s", listed), listed
    assert long_csv(ppo_grader(server, "courses", "gradebook", COURSE).stdout, "walk-ann") == expected

    # Both gradebooks over the API; the boards; the statistics.
    assert long_csv(api(server, "/gradebook.csv", staff, course=COURSE).text, "walk-ann") == expected
    assert wide_csv(api(server, "/gradebook/wide.csv", staff, course=COURSE).text, "walk-ann", titles) == expected
    for slug, value in expected.items():
        board = api(server, "/leaderboard", staff, course=COURSE, exercise=slug).json()["entries"]
        assert {e["name"]: e["board_score"] for e in board}.get("walk-ann") == value  # excused: not ranked
        stats = api(server, f"/exercises/{slug}/stats", staff, course=COURSE).json()
        assert stats["learners_solved"] == (1 if slug == LATE else 0), (slug, stats)  # ben's late 90 is not 100
    overall = api(server, "/leaderboard", staff, course=COURSE).json()["entries"]
    assert next(e["board_score"] for e in overall if e["name"] == "walk-ann") == 195.0

    browse(server, ann, expected, titles, tmp_path)


def browse(server: Server, ann: str, expected: dict[str, float | None], titles: dict[str, str], tmp_path: Path) -> None:
    """The pages, in Chromium: the same numbers, only the course's exercises, the course named."""
    from playwright import sync_api

    shots = DOCS if os.environ.get("UPDATE_SCREENSHOTS") else tmp_path
    shots.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            page.set_default_timeout(30_000)
            page.goto(f"{server.url}/dashboard?course={COURSE}")
            page.fill("#token", server.instructor_token)
            page.click("button[type=submit]")
            page.wait_for_selector("table#exercises")
            assert TITLE in page.locator("#page-course").inner_text()
            rows = page.locator("table#exercises tbody tr")
            assert rows.count() == 3  # the course's set, not the catalogue
            assert sorted(rows.locator("td:first-child").all_inner_texts()) == sorted(titles.values())
            solved = {rows.nth(i).locator("td").nth(0).inner_text(): rows.nth(i).locator("td").nth(3).inner_text()
                      for i in range(3)}
            assert solved == {titles["actor-loss"]: "1", titles["gae"]: "0", titles["kl-penalty"]: "0"}
            links = page.locator("main a, table a, nav a").evaluate_all("els => els.map(e => e.getAttribute('href'))")
            dashboard_links = [h for h in links if h and h.startswith(("/dashboard", "/leaderboard"))
                               and not h.startswith("/dashboard/submissions/")]
            assert dashboard_links and all(f"course={COURSE}" in h for h in dashboard_links), dashboard_links
            page.screenshot(path=str(shots / "dashboard-class.png"))

            page.goto(f"{server.url}/dashboard/learners/walk-ann?course={COURSE}")
            page.wait_for_selector("table#learner-exercises")
            assert counted_on(page) == {titles[s]: v for s, v in expected.items()}
            assert "medical note" in page.locator("table#corrections").inner_text()
            assert page.locator("#correction-form input[name=csrf]").get_attribute("value")
            page.screenshot(path=str(shots / "dashboard-learner.png"))

            page.goto(f"{server.url}/leaderboard?course={COURSE}&exercise=gae")
            tabs = page.locator("nav[aria-label=Exercises] a").all_inner_texts()
            assert tabs == ["Overall", *[titles[s] for s in ("actor-loss", "gae", "kl-penalty")]]
            assert TITLE in page.locator("h1").inner_text()

            learner = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            learner.goto(f"{server.url}/dashboard")
            learner.fill("#token", ann)
            learner.click("button[type=submit]")
            learner.wait_for_selector("table#learner-exercises")
            assert counted_on(learner) == {titles[s]: v for s, v in expected.items()}
            assert "graded by hand" in learner.locator("table#learner-exercises").inner_text()
            assert learner.locator("#correction-form").count() == 0  # the forms are the instructors'
        finally:
            browser.close()


def counted_on(page) -> dict[str, float | None]:  # type: ignore[no-untyped-def]
    """Exercise title -> the score that counts, as the learner page's table shows it."""
    rows = page.locator("table#learner-exercises tbody tr")
    out: dict[str, float | None] = {}
    for i in range(rows.count()):
        cells = rows.nth(i).locator("td")
        value = cells.nth(1).inner_text().strip()
        out[cells.nth(0).inner_text().strip()] = None if value in ("excused", "–") else float(value)
    return out
