"""The dashboard through the app: every number drawn matches the statistics API, the
mistake drill-down, learners' own pages (and 404 for anyone else's), the submission
page, live reload marks, and the login gate."""

from __future__ import annotations

import re
import statistics
from html import unescape
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlsplit

import pytest

from server.models import Role
from server.web.session import COOKIE_NAME
from tests.server.rows import Rows
from tests.server.dashboard.test_web import learner, log_in
from tests.server.conftest import Api

EXERCISE = "actor-loss"
MAX_FOR_MIN = "max instead of min"
NO_MINUS = "missing minus sign"


class Charts(HTMLParser):
    """Every ``<g class="bar">`` of every ``<svg class="chart">``: chart id -> [(label, value, href)]."""

    def __init__(self) -> None:
        super().__init__()
        self.charts: dict[str, list[tuple[str, float, str | None]]] = {}
        self._svg: str | None = None
        self._bar: list | None = None  # type: ignore[type-arg]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "svg" and "chart" in (a.get("class") or ""):
            self._svg = a["id"]
            self.charts[self._svg] = []  # type: ignore[index]
        elif self._svg and tag == "g" and a.get("class") == "bar":
            self._bar = [a["data-label"], float(a["data-value"] or 0), None]
            self.charts[self._svg].append(self._bar)  # type: ignore[arg-type]
        elif self._bar is not None and tag == "a":
            self._bar[2] = a.get("href")

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self._svg = None
        elif tag == "g":
            self._bar = None


def charts(html: str) -> dict[str, list[tuple[str, float, str | None]]]:
    parser = Charts()
    parser.feed(html)
    return {k: [tuple(b) for b in v] for k, v in parser.charts.items()}  # type: ignore[misc]


def table_rows(html: str, table_id: str) -> list[list[str]]:
    """Cell texts of the body rows of ``<table id=table_id>``."""
    match = re.search(rf'<table[^>]*id="{table_id}".*?<tbody>(.*?)</tbody>', html, re.S)
    assert match, f"no table {table_id}"
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", match.group(1), re.S)
    return [[unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", r, re.S)] for r in rows]


def checks(*failed: tuple[str, str | None], passed: tuple[str, ...] = ()) -> list[tuple[str, bool, str | None]]:
    return [(name, True, None) for name in passed] + [(name, False, m) for name, m in failed]


@pytest.fixture
def klass(api: Api, rows: Rows) -> dict[str, int]:
    """A small class on actor-loss (and one gae row) with known numbers; returns submission ids."""
    api.user("teacher", Role.INSTRUCTOR)
    for name, display in [("ann", "Ann Able"), ("ben", "Ben <Baker>"), ("cat", "Cat Cole"), ("dan", "Dan Dee")]:
        learner(api, name, display)
    ids = {}
    # ann: hits max-for-min twice, then solves on her third attempt (day 1, day 1, day 2).
    ids["ann1"] = rows.add("ann", score=50, minute=0, checks=checks(("value", MAX_FOR_MIN), passed=("grad",)))
    ids["ann2"] = rows.add("ann", score=50, minute=10, checks=checks(("value", MAX_FOR_MIN), passed=("grad",)))
    ids["ann3"] = rows.add("ann", score=100, minute=24 * 60, checks=checks(passed=("value", "grad")))
    # ben: max-for-min and a missing minus, never solves; a crash (an attempt, no checks).
    ids["ben1"] = rows.add("ben", score=0, minute=5, checks=checks(("value", MAX_FOR_MIN), ("grad", NO_MINUS)))
    ids["ben2"] = rows.add("ben", score=None, verdict="crashed", minute=6)
    # cat: solves on the first try on day 3.
    ids["cat1"] = rows.add("cat", score=100, minute=48 * 60, checks=checks(passed=("value", "grad")))
    # dan: only gae, so not on this exercise's charts; teacher's own runs never count.
    ids["dan1"] = rows.add("dan", score=30, exercise="gae", minute=1)
    ids["teacher1"] = rows.add("teacher", score=0, minute=2, checks=checks(("value", MAX_FOR_MIN), ("grad", NO_MINUS)))
    return ids


def test_every_number_on_the_exercise_page_matches_the_statistics_api(api: Api, klass: dict[str, int]) -> None:
    teacher = {"Authorization": api.user("boss", Role.ADMIN)["Authorization"]}
    stats = api.client.get(f"/api/v1/exercises/{EXERCISE}/stats", headers=teacher).json()
    log_in(api, teacher)
    page = api.client.get(f"/dashboard/exercises/{EXERCISE}")
    assert page.status_code == 200
    drawn = charts(page.text)
    assert set(drawn) == {"chart-mistakes", "chart-checks", "chart-scores", "chart-days"}

    scores = [(label, value) for label, value, _ in drawn["chart-scores"]]
    expected = [(f"{b['low']}" if b["low"] == b["high"] else f"{b['low']}–{b['high']}", b["learners"])
                for b in stats["score_distribution"]]
    assert scores == expected and len(scores) == 11
    assert dict(scores) == {**{label: 0 for label, _ in expected}, "0–9": 1, "100": 2}  # ben 0; ann, cat 100

    assert [(label, value) for label, value, _ in drawn["chart-checks"]] == [
        (c["name"], c["failure_rate"]) for c in stats["checks"]
    ] == [("value", 0.6), ("grad", 0.2)]  # 3 of 5 graded runs failed value, 1 of 5 grad

    mistakes = drawn["chart-mistakes"]
    assert [(label, value) for label, value, _ in mistakes] == [
        (m["mistake_title"], m["learners"]) for m in stats["mistakes"]
    ] == [(MAX_FOR_MIN, 2), (NO_MINUS, 1)]
    for label, _, href in mistakes:  # each bar links to its learners
        assert href is not None and urlsplit(href).path == f"/dashboard/exercises/{EXERCISE}/mistake"
        assert parse_qs(urlsplit(href).query) == {"course": ["default"], "mistake": [label]}  # no id stored: its title

    assert [(label, value) for label, value, _ in drawn["chart-days"]] == [("01-01", 4), ("01-02", 1), ("01-03", 1)]
    tiles = dict((v, k) for k, v in re.findall(r"<li><b>([^<]*)</b>([^<]*)</li>", page.text))
    assert tiles == {
        "submissions": str(stats["submissions"]),
        "learners attempted": str(stats["learners_attempted"]),
        "learners solved": str(stats["learners_solved"]),
        "median attempts to solve": "2",  # ann 3, cat 1
    }
    assert stats["submissions"] == 6 and stats["learners_attempted"] == 2 + 1 and stats["learners_solved"] == 2
    assert statistics.median([3, 1]) == 2
    # The text values are written on the bars, and the same numbers are in a table.
    assert ">60.0%</text>" in page.text and ">2 learners</text>" in page.text
    assert table_rows(page.text, "chart-checks-data")[0] == ["value", "60.0%", "3 of 5 runs failed"]
    # Latest submissions link to their pages.
    assert f'href="/dashboard/submissions/{klass["cat1"]}"' in page.text
    assert f'href="/dashboard/submissions/{klass["teacher1"]}"' not in page.text


def test_the_class_page_names_the_most_common_mistake_and_who_holds_it(api: Api, klass: dict[str, int]) -> None:
    teacher = api.user("boss", Role.ADMIN)
    log_in(api, teacher)
    home = api.client.get("/dashboard").text
    callout = re.search(r'<div class="callout" id="top-mistake">(.*?)</div>', home, re.S)
    assert callout and MAX_FOR_MIN in callout.group(1) and "PPO clipped actor loss" in callout.group(1)
    assert "2 learners" in callout.group(1)
    href = re.search(r'href="([^"]+)"', callout.group(1)).group(1).replace("&amp;", "&")  # type: ignore[union-attr]
    rows = table_rows(home, "exercises")
    actor = next(r for r in rows if r[0] == "PPO clipped actor loss")
    assert actor == ["PPO clipped actor loss", "6", "3", "2", MAX_FOR_MIN, "2"]
    gae = next(r for r in rows if r[0] == "Generalized Advantage Estimation")
    assert gae == ["Generalized Advantage Estimation", "1", "1", "0", "none named", "0"]

    # The second click: who holds it, the most recent first, and where they stand now.
    holders = api.client.get(href)
    assert holders.status_code == 200
    assert table_rows(holders.text, "holders") == [  # the latest hit first
        ["Ann Able", "ann", "2", "2026-01-01 12:00:00 UTC", "2026-01-01 12:10:00 UTC", "100", "solved", f"#{klass['ann2']}"],
        ["Ben <Baker>", "ben", "1", "2026-01-01 12:05:00 UTC", "2026-01-01 12:05:00 UTC", "0", "not yet", f"#{klass['ben1']}"],
    ]
    assert "Ben &lt;Baker&gt;" in holders.text and "<Baker>" not in holders.text
    assert '<a href="/dashboard/learners/ben?course=default">' in holders.text
    missing = api.client.get(f"/dashboard/exercises/{EXERCISE}/mistake", params={"mistake": "never seen"})
    assert missing.status_code == 200 and "No learner has hit this mistake." in missing.text
    assert api.client.get(f"/dashboard/exercises/{EXERCISE}/mistake").status_code == 400
    # the page's old address (before issue 33) sends a bookmark there, its query kept
    old = api.client.get(urlsplit(href).path.replace("/mistake", "/misconception") + "?" + urlsplit(href).query,
                         follow_redirects=False)
    assert old.status_code == 308 and old.headers["location"] == href
    assert table_rows(api.client.get(old.headers["location"]).text, "holders") == table_rows(holders.text, "holders")
    assert api.client.get("/dashboard/exercises/nope").status_code == 404


def test_learners_list_and_a_learners_page_for_instructors(api: Api, klass: dict[str, int]) -> None:
    log_in(api, api.user("boss", Role.ADMIN))
    listing = table_rows(api.client.get("/dashboard/learners").text, "learners")
    assert [r[:5] for r in listing] == [
        ["Ann Able", "ann", "1", "1", "3"], ["Ben <Baker>", "ben", "1", "0", "2"],
        ["Cat Cole", "cat", "1", "1", "1"], ["Dan Dee", "dan", "1", "0", "1"],
    ]
    ben = api.client.get("/dashboard/learners/ben").text
    rows = table_rows(ben, "learner-exercises")
    # Exercise, the score that counts, how it counts, attempts, last submission.
    assert rows[0][:4] == ["PPO clipped actor loss", "0", "0", "2"] and rows[0][4].startswith("crashed")
    assert rows[2][:5] == ["Generalized Advantage Estimation", "–", "-", "0", "not attempted"]
    assert f'href="/dashboard/submissions/{klass["ben2"]}"' in ben and f'href="/dashboard/submissions/{klass["ben1"]}"' in ben
    assert api.client.get("/dashboard/learners/nobody").status_code == 404


def test_learners_see_only_their_own_pages(api: Api, klass: dict[str, int]) -> None:
    ann = api.client.post("/api/v1/users/ann/tokens/rotate", headers=api.user("root", Role.ADMIN)).json()["token"]
    response = log_in(api, {"Authorization": f"Bearer {ann}"})
    assert response.status_code == 303 and response.headers["location"] == "/dashboard/learners/ann"
    own = api.client.get("/dashboard/learners/ann")
    assert own.status_code == 200 and "<h1>Your work</h1>" in own.text
    assert 'href="/dashboard/exercises/' not in own.text  # learners get no class pages to follow
    assert api.client.get(f"/dashboard/submissions/{klass['ann1']}").status_code == 200
    assert api.client.get("/dashboard", follow_redirects=False).headers["location"] == "/dashboard/learners/ann"
    for path in [
        "/dashboard/learners/ben", "/dashboard/learners/teacher", "/dashboard/learners/nobody",
        f"/dashboard/submissions/{klass['ben1']}", f"/dashboard/submissions/{klass['teacher1']}", "/dashboard/submissions/999999",
        "/dashboard/learners", f"/dashboard/exercises/{EXERCISE}", f"/dashboard/exercises/{EXERCISE}/mistake?mistake=x",
        "/dashboard/gradebook.csv", "/dashboard/gradebook-wide.csv",
        "/dashboard/gradebook-canvas.csv", "/dashboard/gradebook-moodle.csv",
    ]:
        page = api.client.get(path)
        assert page.status_code == 404, path
        assert "Not found" in page.text and "Ben" not in page.text and "Baker" not in page.text, path
    board = api.client.get("/leaderboard")  # the learners' board: classmates by pseudonym only
    assert board.status_code == 200 and "Ben" not in board.text and "Baker" not in board.text
    # Someone else's submission and one that does not exist answer the same page.
    other = api.client.get(f"/dashboard/submissions/{klass['ben1']}").text
    assert other == api.client.get("/dashboard/submissions/999999").text


def test_the_submission_page_shows_the_feedback_and_the_source(api: Api, rows: Rows) -> None:
    learner(api, "eve", "Eve")
    source = "def compute_actor_loss():\n    return '</code></pre><script>alert(1)</script>'\n"
    sid = rows.add("eve", score=40, checks=[("value", False, MAX_FOR_MIN), ("grad", True, None)])
    from server.db import transaction
    from server.models import CheckResult, Submission

    with transaction(api.state.session_factory) as session:
        row = session.get(Submission, sid)
        row.source = source
        row.message = "2 of 3 checks failed."
        row.timings = {"grade_seconds": 0.21, "queue_seconds": 0.003}
        row.stdout = "debug <print>\n"
        session.query(CheckResult).filter_by(submission_id=sid, name="value").update(
            {"message": f"3 of 4096 elements differ. This matches a known mistake: {MAX_FOR_MIN}"}
        )
    log_in(api, api.user("boss", Role.ADMIN))
    page = api.client.get(f"/dashboard/submissions/{sid}").text
    assert "<h1>Submission #%d</h1>" % sid in page
    assert "Verdict: graded" in page and "Score: 40 / 100" in page and "2 of 3 checks failed." in page
    assert "Checks (1 of 2 passed)" in page
    assert "3 of 4096 elements differ." in page and f"Likely mistake: {MAX_FOR_MIN}" in page
    assert page.count(MAX_FOR_MIN) == 1  # said once, on its own line
    assert "graded in 0.21 s (queued 0 s) · cpu 0.5 s · peak memory 1000 B" in page  # as ppo-submit words it
    assert "debug &lt;print&gt;" in page
    assert "&lt;/code&gt;&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)" not in page and page.count("<script") == 1
    assert '<a href="/dashboard/learners/eve?course=default">Eve</a>' in page
    for bad in ("0", "-1", "x", "99999999999"):
        assert api.client.get(f"/dashboard/submissions/{bad}").status_code == 404


def test_pages_reload_when_a_verdict_arrives(api: Api, rows: Rows, klass: dict[str, int]) -> None:
    log_in(api, api.user("boss", Role.ADMIN))
    page = api.client.get(f"/dashboard/exercises/{EXERCISE}")
    csp = page.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "connect-src 'self'" in csp
    assert "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]
    mark = re.search(r'data-live-mark="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
    assert '<body data-live="/dashboard/live"' in page.text
    assert '<noscript><meta http-equiv="refresh" content="30"></noscript>' in page.text
    assert api.client.get("/dashboard/live").json() == {"mark": mark}
    rows.add("cat", score=None, status="queued", minute=99)  # a new submission moves the mark
    queued = api.client.get("/dashboard/live").json()["mark"]
    assert queued != mark
    rows.add("cat", score=90, minute=100)  # and so does a verdict
    assert api.client.get("/dashboard/live").json()["mark"] not in (mark, queued)
    script = api.client.get("/static/live.js")
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
    assert "data-live-mark" in script.text and "location.reload" in script.text
    api.client.cookies.clear()
    assert api.client.get("/dashboard/live").status_code == 401


def test_a_learners_live_mark_moves_only_with_their_own_submissions(api: Api, rows: Rows, klass: dict[str, int]) -> None:
    ann = api.client.post("/api/v1/users/ann/tokens/rotate", headers=api.user("root", Role.ADMIN)).json()["token"]
    log_in(api, {"Authorization": f"Bearer {ann}"})
    mark = api.client.get("/dashboard/live").json()["mark"]
    rows.add("ben", score=10, minute=200)
    assert api.client.get("/dashboard/live").json()["mark"] == mark  # nothing of ben's leaks, not even a count
    rows.add("ann", score=10, minute=201)
    assert api.client.get("/dashboard/live").json()["mark"] != mark


def test_without_a_session_every_page_asks_to_log_in_and_comes_back(api: Api, klass: dict[str, int]) -> None:
    for path in ["/dashboard", f"/dashboard/exercises/{EXERCISE}", "/dashboard/learners/ann", "/dashboard/submissions/1"]:
        page = api.client.get(path)
        assert page.status_code == 200 and 'name="token"' in page.text and 'class="callout"' not in page.text, path
        assert f'<input type="hidden" name="next" value="{path}">' in page.text
    teacher = api.user("boss", Role.ADMIN)
    token = teacher["Authorization"].removeprefix("Bearer ")
    back = api.client.post("/login", data={"token": token, "next": f"/dashboard/exercises/{EXERCISE}"}, follow_redirects=False)
    assert back.headers["location"] == f"/dashboard/exercises/{EXERCISE}"
    for hostile in ["//evil.example/x", "https://evil.example/", "/\\evil", "javascript:alert(1)"]:
        api.client.cookies.clear()
        response = api.client.post("/login", data={"token": token, "next": hostile}, follow_redirects=False)
        assert response.headers["location"] == "/dashboard", hostile
    assert COOKIE_NAME in api.client.cookies
    assert api.client.get("/login").status_code == 200


def test_a_learner_who_logs_in_from_an_instructors_page_lands_on_their_own(api: Api, klass: dict[str, int]) -> None:
    ann = api.client.post("/api/v1/users/ann/tokens/rotate", headers=api.user("root", Role.ADMIN)).json()["token"]
    for asked, landed in [
        ("/leaderboard", "/dashboard/learners/ann"),
        (f"/dashboard/exercises/{EXERCISE}", "/dashboard/learners/ann"),
        ("/dashboard/learners/ben", "/dashboard/learners/ann"),
        ("/dashboard/learners/ann?page=2", "/dashboard/learners/ann?page=2"),
        (f"/dashboard/submissions/{klass['ann1']}", f"/dashboard/submissions/{klass['ann1']}"),
    ]:
        api.client.cookies.clear()
        response = api.client.post("/login", data={"token": ann, "next": asked}, follow_redirects=False)
        assert response.headers["location"] == landed, asked
