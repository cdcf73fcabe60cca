"""Feedback policies through the real ``ppo-submit`` against a real server (uvicorn over HTTP,
the app's clock injected): the submit result, ``show``, ``history``, ``token`` and ``--json``
show a learner exactly what the exercise set's policy allows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from server.app import create_app
from server.cli import app as cli_app
from server.config import Settings
from server.db import transaction
from server.models import Role
from server.users.service import create_user
from tests.server.courses.conftest import DUE, HOUR, RELEASE, FakeClock, Term
from tests.server.courses.feedback_fixtures import EXPECTED, EXPECTED_CUT, PRINTED, RAISED, leaky_report
from tests.server.courses.test_term_cli import ppo_grader
from tests.server.conftest import Api
from tests.server.fakes import FakeGrader
from tests.server.live_server import live_server

COURSE = "rlhf-a"
BIN = Path(sys.executable).parent
SOURCE = "def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):\n    return 0\n"


@pytest.fixture
def live(settings: Settings, clock: FakeClock) -> Iterator[tuple[Term, str]]:
    """A real server on a free port with the fake clock, and a course team made through its API."""
    settings = settings.model_copy(update={"RATE_LIMIT": "1000/minute", "MAX_QUEUED_PER_USER": 100})
    app = create_app(settings, FakeGrader(leaky_report()).factory, clock=clock)  # type: ignore[arg-type]
    with live_server(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        state = app.state.grader
        with transaction(state.session_factory) as session:
            token = create_user(session, "prof", Role.INSTRUCTOR, settings.secret_bytes).token
        yield Term(Api(client, state), clock, {"Authorization": f"Bearer {token}"}), url  # type: ignore[arg-type]


def _setup(term: Term, policy: str) -> None:
    term.course(COURSE)
    term.enroll(COURSE, "ann")
    answer = term.publish(COURSE, release_at=RELEASE, due_at=DUE, feedback_policy=policy)
    assert answer.status_code == 200, answer.text
    term.clock.now = RELEASE + HOUR


def _cli(live: tuple[Term, str], tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    term, url = live
    token = term.tokens["ann"]["Authorization"].removeprefix("Bearer ")
    environ = {**os.environ, "PPO_GRADER_URL": url, "PPO_GRADER_TOKEN": token,
               "XDG_CONFIG_HOME": str(tmp_path / "config"), "NO_COLOR": "1", "COLUMNS": "120"}
    return subprocess.run([str(BIN / "ppo-submit"), *args], env=environ, capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)


def _submit(live: tuple[Term, str], tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    (tmp_path / "mine.py").write_text(SOURCE)
    shown = _cli(live, tmp_path, "mine.py", "--course", COURSE)
    listed = json.loads(_cli(live, tmp_path, "show", _newest(live, tmp_path), "--json").stdout)
    return shown, listed


def _newest(live: tuple[Term, str], tmp_path: Path) -> str:
    term, _ = live
    return str(term.client.get("/api/v1/submissions", headers=term.tokens["ann"]).json()[0]["id"])


def _nothing_leaks(text: str) -> None:
    assert RAISED not in text and PRINTED not in text
    assert "Traceback" not in text or "most recent call last" in text  # only the learner's frames, never a crash


def test_full_shows_the_learner_everything(live: tuple[Term, str], tmp_path: Path) -> None:
    _setup(live[0], "full")
    shown, record = _submit(live, tmp_path)
    assert shown.returncode == 1, shown.stderr
    assert "Score: 60 / 100" in shown.stdout and RAISED in shown.stdout and PRINTED in shown.stdout
    assert record["feedback_view"] == "full" and RAISED in json.dumps(record)


def test_score_shows_the_score_and_the_check_names(live: tuple[Term, str], tmp_path: Path) -> None:
    _setup(live[0], "score")
    shown, record = _submit(live, tmp_path)
    assert shown.returncode == 1, shown.stderr
    for text in (shown.stdout, _cli(live, tmp_path, "show", str(record["id"])).stdout):
        assert "Score: 60 / 100" in text and "feedback (score): the score and the check names only" in text
        assert all(name in text for name in ("value", "gradient", "clip"))
        assert EXPECTED not in text and "max instead of min" not in text
        _nothing_leaks(text)
    assert record["feedback_view"] == "score" and record["feedback"] is None and record["stdout"] == ""
    _nothing_leaks(json.dumps(record))
    history = _cli(live, tmp_path, "history")
    assert history.returncode == 0 and "60" in history.stdout


def test_hidden_until_due_shows_nothing_then_the_report_at_the_due_date(live: tuple[Term, str], tmp_path: Path) -> None:
    term, _ = live
    _setup(term, "hidden-until-due")
    shown, record = _submit(live, tmp_path)
    assert shown.returncode == 0, shown.stderr  # received: nothing to fix yet that it may say
    assert "Score:" not in shown.stdout and "released on 2026-12-11 17:00:00" in shown.stdout
    assert "feedback (hidden-until-due): received and graded" in shown.stdout
    assert (record["verdict"], record["score"], record["checks"]) == (None, None, [])
    _nothing_leaks(shown.stdout + json.dumps(record))
    history = _cli(live, tmp_path, "history").stdout
    assert " 60" not in history
    term.clock.now = DUE
    after = _cli(live, tmp_path, "show", str(record["id"]))
    assert after.returncode == 1 and "Score: 60 / 100" in after.stdout and EXPECTED_CUT in after.stdout
    _nothing_leaks(after.stdout)
    released = json.loads(_cli(live, tmp_path, "show", str(record["id"]), "--json").stdout)
    assert released["feedback_view"] == "report" and released["score"] == 60
    _nothing_leaks(json.dumps(released))


def test_tokens_are_spent_with_ppo_submit_token(live: tuple[Term, str], tmp_path: Path) -> None:
    _setup(live[0], "tokens:1")
    shown, first = _submit(live, tmp_path)
    assert "1 token left today (ppo-submit token" in shown.stdout and EXPECTED not in shown.stdout
    _, second = _submit(live, tmp_path)
    spent = _cli(live, tmp_path, "token", str(first["id"]), "--json")
    assert spent.returncode == 1, spent.stderr
    record = json.loads(spent.stdout)
    assert (record["feedback_view"], record["token_spent"], record["tokens_left"]) == ("report", True, 0)
    assert EXPECTED_CUT in spent.stdout
    _nothing_leaks(spent.stdout)
    assert EXPECTED_CUT in _cli(live, tmp_path, "show", str(first["id"])).stdout  # spent once, kept
    refused = _cli(live, tmp_path, "token", str(second["id"]))
    assert refused.returncode == 2 and "spent all 1 tokens of today" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "Traceback" not in refused.stderr
    assert EXPECTED not in _cli(live, tmp_path, "show", str(second["id"])).stdout


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["full", "score", "hidden-until-due", "tokens:2"])
def test_chromium_shows_a_learner_what_the_policy_allows(live: tuple[Term, str], tmp_path: Path, policy: str) -> None:
    """The learner's own pages in a real browser: their page (best score, submissions table) and
    the submission's page; hidden-until-due releases there at the due date too."""
    from playwright import sync_api

    from tests.server.dashboard.test_web import CHROMIUM, CHROMIUM_ARGS

    term, url = live
    _setup(term, policy)
    _, record = _submit(live, tmp_path)
    if policy.startswith("tokens"):
        _, unspent = _submit(live, tmp_path)
        assert _cli(live, tmp_path, "token", str(record["id"])).returncode == 1
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            page.set_default_timeout(30_000)
            page.goto(f"{url}/dashboard")
            page.fill("#token", term.tokens["ann"]["Authorization"].removeprefix("Bearer "))
            page.click("button[type=submit]")
            page.wait_for_url(f"{url}/dashboard/learners/ann")
            best = page.locator("table#learner-exercises tbody tr").first.locator("td").nth(1).inner_text()
            scores = page.locator("table.submissions tbody td.num").all_inner_texts()
            page.goto(f"{url}/dashboard/submissions/{record['id']}")
            section = page.locator("#feedback").inner_text()
            facts = page.locator("#submission-facts").inner_text()
            page.screenshot(path=str(tmp_path / f"{policy.replace(':', '-')}.png"), full_page=True)
            if policy == "full":
                assert best == "60" and "60" in scores
                assert RAISED in section and PRINTED in section and EXPECTED in section
                assert "Feedback" not in facts
            elif policy == "score":
                assert best == "60" and "60" in scores and "Score: 60 / 100" in section
                assert "gradient" in section and EXPECTED not in section and "max instead of min" not in section
                assert RAISED not in section and PRINTED not in section
                assert "score: the score and the check names only" in facts
            elif policy == "hidden-until-due":
                assert best == "hidden until due" and "60" not in scores
                assert "Score" not in section and "released on 2026-12-11 17:00:00" in section
                assert RAISED not in section and EXPECTED not in section
                term.clock.now = DUE
                page.reload()
                section = page.locator("#feedback").inner_text()
                assert "Score: 60 / 100" in section and EXPECTED_CUT in section
                assert RAISED not in section and PRINTED not in section
                page.goto(f"{url}/dashboard/learners/ann")
                assert page.locator("table#learner-exercises tbody tr").first.locator("td").nth(1).inner_text() == "60"
            else:  # the token was spent on this one (with ppo-submit), not on the other
                assert "Score: 60 / 100" in section and EXPECTED_CUT in section and RAISED not in section
                assert "a token was spent on this submission" in facts and page.locator("#spend-token").count() == 0
                page.goto(f"{url}/dashboard/submissions/{unspent['id']}")
                other = page.locator("#feedback").inner_text()
                assert "Score: 60 / 100" in other and EXPECTED not in other
                assert "1 token left today" in page.locator("#submission-facts").inner_text()
                page.click("#spend-token button")  # the page's own button spends the last one
                page.wait_for_selector("#feedback")
                assert page.url == f"{url}/dashboard/submissions/{unspent['id']}"
                other = page.locator("#feedback").inner_text()
                assert EXPECTED_CUT in other and RAISED not in other and PRINTED not in other
                assert "a token was spent on this submission" in page.locator("#submission-facts").inner_text()
                assert _cli(live, tmp_path, "token", str(_submit(live, tmp_path)[1]["id"])).returncode == 2
        finally:
            browser.close()


def test_instructors_set_the_policy_with_ppo_grader_sets(env: Settings) -> None:  # noqa: F811  (the fixture)
    """``ppo-grader sets publish --feedback`` sets it, ``sets list`` shows it, a bad one is one line."""
    ppo_grader("courses", "create", COURSE, "--time-zone", "Europe/Paris")
    ppo_grader("sets", "publish", COURSE, "actor-loss", "--due", "2026-12-11 17:00", "--feedback", "hidden-until-due")
    ppo_grader("sets", "publish", COURSE, "gae", "--feedback", "tokens:3")
    ppo_grader("sets", "publish", COURSE, "whiten")
    listing = ppo_grader("sets", "list", COURSE).splitlines()
    assert [line.rsplit("; ", 1)[1] for line in listing] == [
        "feedback: hidden-until-due", "feedback: tokens:3", "feedback: full"]
    for bad, said in (("tokens:0", "full, score, hidden-until-due or tokens:N"), ("hidden-until-due", "give a due date")):
        result = CliRunner().invoke(cli_app, ["sets", "publish", COURSE, "kl-penalty", "--feedback", bad])
        assert result.exit_code != 0 and said in result.output and "Traceback" not in result.output
        assert len(result.output.strip().splitlines()) == 1, result.output


def test_ppo_submit_exercises_names_the_policy(live: tuple[Term, str], tmp_path: Path) -> None:
    _setup(live[0], "tokens:2")
    listing = _cli(live, tmp_path, "exercises")
    assert listing.returncode == 0 and "feedback: tokens:2 (2 left today)" in listing.stdout, listing.stdout
