"""The instructors' HTML leaderboard: login by token, signed session cookie, the board.

Fast tests drive the app in-process; the slow test starts `ppo-grader serve`, grades real
submissions through the jail, and reads the page in Debian's headless Chromium (Playwright).
"""

from __future__ import annotations

import os
import re
import shutil
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from exercises.registry import get_exercise
from server.db import transaction
from server.models import ApiToken, EndedSession, Role
from server.users.service import create_user
from server.web.session import COOKIE_NAME, SESSION_SECONDS, Cookie, end_session, sign
from tests.e2e.conftest import Server, server  # noqa: F401  (the real-server fixture)
from tests.server.rows import Rows, at
from tests.server.conftest import Api, StartApi

BOARD = "/leaderboard"
LOGIN = "/login"
LOGOUT = "/logout"
LIVE_SCRIPT_TAG = '<script src="/static/live.js" defer></script>'


# --- helpers ---------------------------------------------------------------------------

class _Table(HTMLParser):
    """Collects the text of each cell of ``<table id="board">``'s body rows."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._in_board = self._in_body = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table" and ("id", "board") in attrs:
            self._in_board = True
        elif self._in_board and tag == "tbody":
            self._in_body = True
        elif self._in_body and tag == "tr":
            self.rows.append([])
        elif self._in_body and tag == "td":
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tbody":
            self._in_body = False
        elif tag == "table":
            self._in_board = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def board_rows(html: str) -> list[list[str]]:
    """Cells of the board's body rows: rank, learner, login, score, attempts, solved, reached."""
    parser = _Table()
    parser.feed(html)
    return parser.rows


def token_of(headers: dict[str, str]) -> str:
    return headers["Authorization"].removeprefix("Bearer ")


def log_in(api: Api, headers: dict[str, str]) -> httpx.Response:
    return api.client.post(LOGIN, data={"token": token_of(headers)}, follow_redirects=False)


def learner(api: Api, name: str, display_name: str) -> dict[str, str]:
    with transaction(api.state.session_factory) as session:
        token = create_user(session, name, Role.LEARNER, api.state.settings.secret_bytes, display_name).token
    return {"Authorization": f"Bearer {token}"}


# --- fast tests --------------------------------------------------------------------------

def test_login_form_renders_without_a_session(api: Api) -> None:
    response = api.client.get(BOARD)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    html = response.text
    assert '<form class="login" method="post" action="/login">' in html
    assert '<input type="hidden" name="next" value="/leaderboard">' in html  # back here after logging in
    assert '<input id="token" name="token" type="password"' in html
    assert "<script" not in html and 'id="board"' not in html
    assert response.headers["cache-control"] == "no-store"
    assert "default-src 'none'" in response.headers["content-security-policy"]
    assert "set-cookie" not in response.headers


def test_a_learner_logs_in_to_their_own_page_and_reads_the_board_by_pseudonym(api: Api, rows: Rows) -> None:
    """A learner's board (issue 34): their course's, every learner by the course's pseudonym
    (their own row too, marked), no login and no "shown to learners as" column."""
    ann = learner(api, "ann", "Ann Able")
    learner(api, "ben", "Ben Baker")
    rows.add("ann", score=50, minute=1)
    rows.add("ben", score=90, minute=2)
    response = log_in(api, ann)
    assert response.status_code == 303 and response.headers["location"] == "/dashboard/learners/ann"
    assert COOKIE_NAME in api.client.cookies
    assert 'href="/leaderboard?course=default">Your course' in api.client.get("/dashboard/learners/ann").text
    board = api.client.get(BOARD)
    assert board.status_code == 200 and 'id="board"' in board.text and "Shown to learners as" not in board.text
    cells = board_rows(board.text)
    assert [len(r) for r in cells] == [6, 6] and [r[2] for r in cells] == ["90", "50"]
    assert "Ben" not in board.text and "ben" not in [c for r in cells for c in r] and cells[1][1].endswith("(you)")


def test_an_unknown_or_empty_token_gets_the_form_again(api: Api) -> None:
    response = api.client.post(LOGIN, data={"token": "ppg_not-a-token"}, follow_redirects=False)
    assert response.status_code == 401
    assert "unknown or revoked" in response.text and 'name="token"' in response.text
    assert api.client.post(LOGIN, data={"token": "  "}, follow_redirects=False).status_code == 400
    assert api.client.post(LOGIN, data={}, follow_redirects=False).status_code == 400
    assert api.client.post(LOGIN, json={"token": "x"}, follow_redirects=False).status_code == 400
    assert api.client.post(LOGIN, data={"token": "x" * 5000}, follow_redirects=False).status_code == 400
    assert COOKIE_NAME not in api.client.cookies


def test_an_instructor_logs_in_and_the_board_shows_rows_in_order(api: Api, rows: Rows) -> None:
    teacher = api.user("teacher", Role.INSTRUCTOR)
    learner(api, "ann", "Ann Able")
    learner(api, "ben", "Ben Baker")
    learner(api, "cat", "Cat Cole")
    rows.add("ann", score=80, minute=5)
    rows.add("ben", score=80, minute=2)  # same best, reached earlier: above ann
    rows.add("ben", score=None, verdict="crashed", minute=3)  # an attempt that lowers nothing
    rows.add("cat", score=100, minute=30)
    rows.add("teacher", score=100, minute=1)  # instructors are never ranked

    response = log_in(api, teacher)
    assert response.status_code == 303 and response.headers["location"] == "/dashboard"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE_NAME}=")
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/;" in cookie
    assert "Secure" not in cookie  # plain http here; over https the cookie is Secure
    assert token_of(teacher) not in cookie and "ppg_" not in cookie  # a signed id, not the token

    private = api.client.get(BOARD, params={"exercise": "actor-loss"})  # by default learners see pseudonyms
    assert "Shown to learners as" in private.text and len(board_rows(private.text)[0]) == 8
    real = api.client.patch("/api/v1/courses/default/settings", json={"board_real_names": True}, headers=teacher)
    assert real.status_code == 200
    page = api.client.get(BOARD, params={"exercise": "actor-loss"})
    assert page.status_code == 200
    assert board_rows(page.text) == [
        ["1", "Cat Cole", "cat", "100", "1", "1", "2026-01-01 12:30:00 UTC"],
        ["2", "Ben Baker", "ben", "80", "2", "0", "2026-01-01 12:02:00 UTC"],
        ["3", "Ann Able", "ann", "80", "1", "0", "2026-01-01 12:05:00 UTC"],
    ]
    assert f'datetime="{at(30).isoformat()}"' in page.text
    assert 'action="/logout"' in page.text and "Log out" in page.text
    assert "Signed in as teacher" in page.text
    assert ('<a href="/leaderboard?course=default&amp;exercise=actor-loss" aria-current="page">PPO clipped actor loss</a>'
            in page.text)
    assert '<a href="/dashboard/learners/cat?course=default">Cat Cole</a>' in page.text
    assert page.text.count("<script") == 1 and LIVE_SCRIPT_TAG in page.text  # the one same-origin file, no inline code


def test_an_admin_logs_in_too(api: Api) -> None:
    boss = api.user("boss", Role.ADMIN)
    assert log_in(api, boss).status_code == 303
    page = api.client.get(BOARD)
    assert page.status_code == 200 and 'id="board"' in page.text
    assert "No learner has a finished submission yet." in page.text


def test_exercise_selector_overall_table_and_paging(api: Api, rows: Rows) -> None:
    teacher = api.user("teacher", Role.INSTRUCTOR)
    names = [f"l{i}" for i in range(5)]
    for i, name in enumerate(names):
        learner(api, name, f"Learner {i}")
        rows.add(name, score=90 - i, minute=i)
    rows.add("l4", score=100, exercise="gae", minute=50)  # overall: 86 + 100 puts l4 first
    log_in(api, teacher)
    api.client.patch("/api/v1/courses/default/settings", json={"board_real_names": True}, headers=teacher)

    overall = api.client.get(BOARD).text
    assert [r[2] for r in board_rows(overall)] == ["l4", "l0", "l1", "l2", "l3"]
    assert board_rows(overall)[0][3] == "186" and board_rows(overall)[0][5] == "1"
    assert '<a href="/leaderboard?course=default" aria-current="page">Overall</a>' in overall
    assert '<a href="/leaderboard?course=default&amp;exercise=gae">Generalized Advantage Estimation</a>' in overall

    first = api.client.get(BOARD, params={"exercise": "actor-loss", "limit": 2}).text
    assert [r[2] for r in board_rows(first)] == ["l0", "l1"]
    assert "Page 1 of 3" in first and "1–2 of 5" in first
    assert 'href="/leaderboard?course=default&amp;exercise=actor-loss&amp;page=2&amp;limit=2">Next' in first
    assert 'rel="prev"' not in first
    last = api.client.get(BOARD, params={"exercise": "actor-loss", "limit": 2, "page": 3}).text
    assert board_rows(last) == [["5", "Learner 4", "l4", "86", "1", "0", "2026-01-01 12:04:00 UTC"]]
    assert 'href="/leaderboard?course=default&amp;exercise=actor-loss&amp;page=2&amp;limit=2">← Previous' in last
    assert 'rel="next"' not in last
    past = api.client.get(BOARD, params={"exercise": "actor-loss", "page": 9}).text
    assert "No rows on this page." in past

    gae = api.client.get(BOARD, params={"exercise": "gae"}).text
    assert [r[2] for r in board_rows(gae)] == ["l4"]
    assert api.client.get(BOARD, params={"exercise": "nope"}).status_code == 404
    for bad in ({"page": "0"}, {"page": "x"}, {"limit": "0"}, {"limit": "201"}, {"page": "999999", "limit": "200"}):
        assert api.client.get(BOARD, params=bad).status_code == 400, bad


def test_display_names_are_escaped(api: Api, rows: Rows) -> None:
    teacher = api.user("teacher", Role.INSTRUCTOR)
    learner(api, "mallory", "<script>alert(1)</script>")
    learner(api, "quote", '" onmouseover="x')
    rows.add("mallory", score=50, minute=1)
    rows.add("quote", score=40, minute=1)
    log_in(api, teacher)
    html = api.client.get(BOARD).text
    assert "<script>alert(1)</script>" not in html and html.count("<script") == 1 and LIVE_SCRIPT_TAG in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert '" onmouseover="x' not in html and "&quot; onmouseover=&quot;x" in html
    assert [r[1] for r in board_rows(html)] == ["<script>alert(1)</script>", '" onmouseover="x']


def test_logout_clears_the_cookie(api: Api) -> None:
    teacher = api.user("teacher", Role.INSTRUCTOR)
    log_in(api, teacher)
    assert 'id="board"' in api.client.get(BOARD).text
    response = api.client.post(LOGOUT, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/login"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f'{COOKIE_NAME}=""') and "Max-Age=0" in cookie and "Path=/" in cookie
    assert COOKIE_NAME not in api.client.cookies
    page = api.client.get(BOARD)
    assert 'name="token"' in page.text and 'id="board"' not in page.text


def test_a_logged_out_cookie_is_refused_by_every_app_on_the_database(api: Api, start_api: StartApi) -> None:
    """A logout is a row of ``ended_sessions``, not one process's memory: a second app on the
    same database (another API process, or this one restarted) refuses the cookie too, on
    SQLite and on PostgreSQL. ``tests/hostile/test_attack_uploads_notebooks_sessions.py`` restarts the real server."""
    teacher = api.user("teacher", Role.INSTRUCTOR)
    log_in(api, teacher)
    cookie = api.client.cookies[COOKIE_NAME]
    other = start_api()  # the same settings: the same database
    assert 'id="board"' in other.client.get(BOARD, cookies={COOKIE_NAME: cookie}).text  # live in both
    assert api.client.post(LOGOUT, follow_redirects=False).status_code == 303
    other.client.cookies.clear()
    page = other.client.get(BOARD, cookies={COOKIE_NAME: cookie})
    assert 'id="board"' not in page.text and "session has ended" in page.text
    api.client.cookies.clear()
    assert 'id="board"' not in api.client.get(BOARD, cookies={COOKIE_NAME: cookie}).text
    assert log_in(other, teacher).status_code == 303 and 'id="board"' in other.client.get(BOARD).text  # a new login


def test_ended_sessions_are_kept_only_until_their_cookies_expire(api: Api) -> None:
    """Each logout prunes the ended sessions whose cookies have expired (``verify`` refuses
    those anyway), so the table holds at most one cookie lifetime of logouts; logging out
    twice is one row."""
    start = 1_900_000_000

    def ended() -> set[str]:
        with api.state.session_factory() as session:
            return set(session.scalars(select(EndedSession.nonce)))

    with transaction(api.state.session_factory) as session:
        for i in range(5):
            end_session(session, Cookie(1, 1, start + 10 + i, f"n{i}"), now=start)
        end_session(session, Cookie(1, 1, start + 14, "n4"), now=start)  # the same cookie again
    assert ended() == {"n0", "n1", "n2", "n3", "n4"}
    with transaction(api.state.session_factory) as session:
        end_session(session, Cookie(1, 1, start + 12 + SESSION_SECONDS, "late"), now=start + 12)
    assert ended() == {"n3", "n4", "late"}  # expired at or before start + 12: gone


def test_a_revoked_tokens_cookie_no_longer_works(api: Api) -> None:
    teacher = api.user("teacher", Role.INSTRUCTOR)
    log_in(api, teacher)
    stolen = api.client.cookies[COOKIE_NAME]
    assert 'id="board"' in api.client.get(BOARD).text
    revoked = api.client.post("/api/v1/users/teacher/tokens/revoke", headers=teacher)
    assert revoked.status_code == 200 and revoked.json()["revoked"] == 1
    page = api.client.get(BOARD)
    assert page.status_code == 200 and 'id="board"' not in page.text
    assert "session has ended" in page.text and 'name="token"' in page.text
    assert "Max-Age=0" in page.headers["set-cookie"]  # the dead cookie is cleared
    api.client.cookies.clear()
    again = api.client.get(BOARD, cookies={COOKIE_NAME: stolen})  # replaying it does not help
    assert 'id="board"' not in again.text
    assert log_in(api, teacher).status_code == 401


def test_a_rotated_token_ends_the_session_and_the_new_one_logs_in(api: Api) -> None:
    teacher = api.user("teacher", Role.INSTRUCTOR)
    log_in(api, teacher)
    rotated = api.client.post("/api/v1/users/teacher/tokens/rotate", headers=teacher)
    assert rotated.status_code == 200
    assert 'id="board"' not in api.client.get(BOARD).text
    assert log_in(api, {"Authorization": f"Bearer {rotated.json()['token']}"}).status_code == 303
    assert 'id="board"' in api.client.get(BOARD).text


def test_forged_expired_and_learner_cookies_are_refused(api: Api) -> None:
    teacher = api.user("teacher", Role.INSTRUCTOR)
    ann = api.user("ann")
    secret = api.state.settings.secret_bytes
    with api.state.session_factory() as session:
        tokens = {t.user.name: (t.user_id, t.id) for t in session.query(ApiToken).all()}
    good = sign(*tokens["teacher"], secret)
    assert 'id="board"' in api.client.get(BOARD, cookies={COOKIE_NAME: good}).text

    def refused(value: str) -> bool:
        api.client.cookies.clear()
        page = api.client.get(BOARD, cookies={COOKIE_NAME: value})
        return page.status_code == 200 and 'id="board"' not in page.text and "session has ended" in page.text

    user_id, token_id = tokens["teacher"]
    assert refused(good[:-2] + ("AA" if not good.endswith("AA") else "BB"))  # bad signature
    assert refused(good.replace(f"v2.{user_id}.", f"v2.{user_id + 1}.", 1))  # another user id, same signature
    assert sign(user_id, token_id, secret) != sign(user_id, token_id, secret)  # each login: its own session
    assert refused(sign(user_id, token_id, b"another-secret"))  # signed with another key
    assert refused(sign(user_id, token_id, secret, now=time.time() - 13 * 3600))  # expired
    api.client.cookies.clear()
    learners = api.client.get(BOARD, cookies={COOKIE_NAME: sign(*tokens["ann"], secret)})
    assert learners.status_code == 200 and "Shown to learners as" not in learners.text  # a learner's: their board
    assert refused(sign(user_id, tokens["ann"][1], secret))  # another user's token id
    assert refused("garbage") and refused("v1.1.1.1.1.1")
    assert ann and teacher


def test_cross_site_posts_are_refused(api: Api) -> None:
    teacher = api.user("teacher", Role.INSTRUCTOR)
    evil = {"Origin": "https://evil.example"}
    response = api.client.post(LOGIN, data={"token": token_of(teacher)}, headers=evil, follow_redirects=False)
    assert response.status_code == 403 and "set-cookie" not in response.headers
    opaque = {"Origin": "null"}  # sandboxed frames and the like
    assert api.client.post(LOGIN, data={"token": token_of(teacher)}, headers=opaque, follow_redirects=False).status_code == 403
    same = {"Origin": "http://testserver"}
    assert api.client.post(LOGIN, data={"token": token_of(teacher)}, headers=same, follow_redirects=False).status_code == 303
    assert api.client.post(LOGOUT, headers=evil, follow_redirects=False).status_code == 403
    assert COOKIE_NAME in api.client.cookies  # still logged in


def test_the_html_routes_stay_out_of_the_openapi_schema(api: Api) -> None:
    paths = api.client.get("/api/v1/openapi.json").json()["paths"]
    assert not [p for p in paths if p.startswith(("/leaderboard", "/dashboard", "/login", "/logout", "/static"))]
    assert "/api/v1/leaderboard" in paths



def test_every_page_asks_for_its_login_by_dependency() -> None:
    """Authorization lives in ``server.web.deps``: every page under /dashboard and /leaderboard
    depends on ``get_web_user`` (instructors' pages through ``get_web_instructor``), so a route
    cannot forget the check; only the JSON change mark reads the cookie itself (a JSON 401)."""
    from fastapi.routing import APIRoute

    from server.dashboard.router import router as dashboard
    from server.leaderboard.page_router import router as board
    from server.web.deps import get_web_instructor, get_web_sender, get_web_user

    def calls(dependant: Any) -> set[Any]:
        found = {dependant.call}
        for sub in dependant.dependencies:
            found |= calls(sub)
        return found

    pages = {r.path: calls(r.dependant) for r in dashboard.routes + board.routes if isinstance(r, APIRoute)}
    assert len(pages) >= 10 and "/leaderboard" in pages and "/dashboard/gradebook.csv" in pages
    # the upload authenticates through get_web_sender (get_web_user in a session it closes
    # before the body is read), so no database connection waits on a slow body
    assert sorted(
        path for path, found in pages.items() if get_web_user not in found and get_web_sender not in found
    ) == ["/dashboard/live"]
    everyone = {"/dashboard", "/dashboard/learners/{name}", "/dashboard/submissions/{submission_id}", "/dashboard/live",
                "/dashboard/submit",  # a learner submits from their own page
                "/dashboard/submissions/{submission_id}/token",  # and spends a feedback token on their submission's
                "/dashboard/starter/{name}",  # downloads a starter released to them
                "/leaderboard"}  # and reads their course's board (by pseudonym)
    assert sorted(path for path, found in pages.items() if get_web_instructor not in found) == sorted(everyone)


# --- the real server in a real browser ---------------------------------------------------

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]


def _api_user(server: Server, name: str, display_name: str) -> str:  # noqa: F811
    response = httpx.post(
        f"{server.url}/api/v1/users", json={"name": name, "display_name": display_name},
        headers={"Authorization": f"Bearer {server.instructor_token}"}, timeout=30,
    )
    assert response.status_code == 201, response.text
    return response.json()["token"]


def _api_submit(server: Server, token: str, source: str) -> int:  # noqa: F811
    response = httpx.post(
        f"{server.url}/api/v1/submissions", json={"exercise": "actor-loss", "source": source},
        headers={"Authorization": f"Bearer {token}"}, timeout=30,
    )
    assert response.status_code in (201, 202), response.text
    return int(response.json()["id"])


def _wait_done(server: Server, token: str, submission_id: int, deadline: float) -> dict:  # type: ignore[type-arg]  # noqa: F811
    while True:
        body = httpx.get(f"{server.url}/api/v1/submissions/{submission_id}",
                         headers={"Authorization": f"Bearer {token}"}, timeout=30).json()
        if body["status"] == "done" or time.monotonic() > deadline:
            return body
        time.sleep(0.5)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_chromium_logs_in_and_reads_the_board(server: Server, tmp_path: Path) -> None:  # noqa: F811
    assert os.access(CHROMIUM, os.X_OK) and shutil.which("chromium"), (
        "Debian's chromium is needed (apt-get install chromium; see .ci/install-extra.sh)"
    )
    try:
        from playwright import sync_api
    except ImportError:
        pytest.fail("the playwright package is needed (.venv/bin/pip install playwright; see .ci/install-extra.sh)")

    exercise = get_exercise("actor-loss")
    wrong = next(m for m in exercise.mistakes if m.key == "max-for-min").source(exercise.function_name)
    seeded = [  # (login, display name, source): graded 100, graded below 100, a syntax error
        ("web-grace", "Grace Hopper", exercise.reference_source),
        ("web-alan", "Alan <Turing>", wrong),
        ("web-edsger", "Edsger Dijkstra", "def compute_actor_loss(a, b, c, clip_range=0.2):\n    return (a +\n"),
    ]
    tokens = {name: _api_user(server, name, display) for name, display, _ in seeded}
    ids = {name: _api_submit(server, tokens[name], source) for name, _, source in seeded}
    deadline = time.monotonic() + 600
    results = {name: _wait_done(server, tokens[name], ids[name], deadline) for name in ids}
    assert all(r["status"] == "done" for r in results.values()), results
    assert (results["web-grace"]["verdict"], results["web-grace"]["score"]) == ("graded", 100)
    assert results["web-alan"]["verdict"] == "graded" and 0 <= results["web-alan"]["score"] < 100
    assert results["web-edsger"]["verdict"] == "syntax_error"

    # What the API says, for the same board (other slow tests may share this server).
    api_board = httpx.get(f"{server.url}/api/v1/leaderboard", params={"exercise": "actor-loss", "limit": 500},
                          headers={"Authorization": f"Bearer {server.instructor_token}"}, timeout=30).json()
    expected = [(e["learner"], e["name"], e["board_score"]) for e in api_board["entries"] if e["name"].startswith("web-")]
    assert [name for _, name, _ in expected] == ["web-grace", "web-alan", "web-edsger"]

    screenshot = tmp_path / "leaderboard.png"
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            page.set_default_timeout(30_000)
            page.goto(f"{server.url}/leaderboard")
            assert page.locator("h1").inner_text() == "ppo-grader · log in"

            # A learner logging in from the board's form lands on their own page, not the board.
            page.fill("#token", tokens["web-grace"])
            page.click("button[type=submit]")
            page.wait_for_url(re.compile(r".*/dashboard/learners/web-grace(\?course=[\w-]+)?$"))  # links carry their course
            assert page.locator("h1").inner_text() == "Your work"
            response = page.goto(f"{server.url}/leaderboard")  # the learners' board: by pseudonym, no logins
            assert response is not None and response.status == 200 and page.locator("table#board").count() == 1
            assert "Alan" not in page.content() and "web-alan" not in page.content()
            context.clear_cookies()

            # The instructor logs in and comes back to the board.
            page.goto(f"{server.url}/leaderboard")
            page.fill("#token", server.instructor_token)
            page.click("button[type=submit]")
            page.wait_for_selector("table#board")
            assert page.url.split("?")[0] == f"{server.url}/leaderboard"
            [cookie] = context.cookies()
            assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
            assert server.instructor_token not in cookie["value"]

            page.click(f"nav a:has-text('{exercise.title}')")
            page.wait_for_url(re.compile(r".*/leaderboard\?(course=[\w-]+&)?exercise=actor-loss(&course=[\w-]+)?$"))
            # every page names its course
            assert page.locator("h1").inner_text() == f"Leaderboard · {exercise.title} (Default course)"
            shown = [
                [cell.strip() for cell in row.locator("td").all_inner_texts()]
                for row in page.locator("table#board tbody tr").all()
            ]
            # learners see pseudonyms by default, so the instructor's board has a column saying which
            shown = [r[:3] + r[4:] for r in shown]
            ours = [r for r in shown if r[2].startswith("web-")]
            assert [(r[1], r[2]) for r in ours] == [(display, name) for display, name, _ in expected]
            assert [float(r[3]) for r in ours] == pytest.approx([score for _, _, score in expected], abs=0.01)
            assert ours[0][3] == "100" and ours[2][3] == "0" and ours[2][6] == "never"
            assert [int(r[0]) for r in shown] == list(range(1, len(shown) + 1))
            page.screenshot(path=str(screenshot), full_page=True)

            # Logging out returns to the form and the board is gone.
            page.click("text=Log out")
            page.wait_for_selector("#token")
            assert not context.cookies()
            page.goto(f"{server.url}/leaderboard?exercise=actor-loss")
            assert page.locator("table#board").count() == 0
        finally:
            browser.close()
    assert screenshot.stat().st_size > 10_000
    print(f"screenshot: {screenshot}")
