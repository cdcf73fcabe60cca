"""The learner's side of a course (issue 34, items 2-4), through the app with its clock set: the
learner's page lists each exercise's dates in the course's zone, late rule, feedback policy,
tokens left and starters; its attempt counts agree with ``GET /courses/{course}/exercises``
(``ppo-submit exercises``) while scores are hidden; an excused exercise has no late rule; a late
upload from the browser answers a confirmation page and sends nothing until confirmed; the
starter downloads are what ``ppo-submit starter`` writes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

import httpx
import pytest

from notebook_format.starter import starter_notebook
from ppo_submit.courses import exercises_tables
from ppo_submit.render import plain_text
from server.app import create_app
from server.config import Settings
from server.dashboard.upload import LATE_CONFIRMED
from server.db import transaction
from server.models import Role, Submission
from server.users.service import create_user
from tests.server.conftest import Api
from tests.server.courses.conftest import CLOSE, DAY, DUE, HOUR, RELEASE, FakeClock, Term, clock, term  # noqa: F401
from tests.server.fakes import FakeGrader
from tests.server.live_server import live_server

COURSE = "rlhf-a"
SOURCE = "def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):\r\n    return 0\r\n"


@pytest.fixture
def grader() -> FakeGrader:
    return FakeGrader()


def _course(term: Term, policy: str = "tokens:2", **rules: Any) -> None:
    term.course(COURSE)
    term.enroll(COURSE, "ann")
    rules = {"release_at": RELEASE, "due_at": DUE, "close_at": CLOSE, "penalty_percent": 10, **rules}
    answer = term.publish(COURSE, feedback_policy=policy, **rules)
    assert answer.status_code == 200, answer.text


def _log_in(term: Term) -> None:
    token = term.tokens["ann"]["Authorization"].removeprefix("Bearer ")
    assert term.client.post("/login", data={"token": token}, follow_redirects=False).status_code == 303


def _row(page: str, table: str) -> dict[str, str]:
    """The cells of the actor-loss row of ``table`` on ``page``, by class (or position)."""
    body = page.split(f'id="{table}"', 1)[1].split("</table>", 1)[0]
    row = re.search(r'<tr data-exercise="actor-loss"[^>]*>(.*?)</tr>', body, re.S)
    assert row is not None, body
    cells = re.findall(r'<td(?: class="([^"]*)")?[^>]*>(.*?)</td>', row.group(1), re.S)
    return {cls.split()[-1] if cls else str(i): unescape(re.sub(r"<[^>]+>", "", text)) for i, (cls, text) in enumerate(cells)}


def test_the_learners_page_lists_dates_late_rule_policy_tokens_and_starters(term: Term) -> None:
    _course(term)
    term.clock.now = RELEASE + HOUR
    _log_in(term)
    page = term.client.get("/dashboard/learners/ann")
    assert page.status_code == 200 and "(times in Europe/Paris)" in page.text
    row = _row(page.text, "exercise-dates")
    assert row["release"] == "2026-12-07 09:00:00 CET" and row["due"] == "2026-12-11 17:00:00 CET"
    assert row["close"] == "2026-12-13 17:00:00 CET"
    assert row["late-rule"] == "-10% of the score per day started late"
    assert row["policy"].startswith("tokens:2:") and "(2 left today)" in row["policy"]
    assert row["starter"] == ".py · .ipynb" and 'href="/dashboard/starter/actor-loss.py?course=rlhf-a"' in page.text
    assert 'href="/leaderboard?course=rlhf-a"' in page.text  # the board, linked from the page


def test_attempts_agree_with_ppo_submit_exercises_while_scores_are_hidden(term: Term) -> None:
    _course(term, "hidden-until-due")
    done = term.submit_at(RELEASE + HOUR, "ann", course=COURSE)
    assert done["feedback_view"] == "hidden" and done["score"] is None
    listed = term.client.get(f"/api/v1/courses/{COURSE}/exercises", headers=term.tokens["ann"]).json()
    [window] = listed["exercises"]
    assert window["attempts_used"] == 1
    _log_in(term)
    page = term.client.get("/dashboard/learners/ann").text
    assert _row(page, "exercise-dates")["attempts"] == "1"
    cells = re.search(r'<tr data-exercise="actor-loss"[^>]*>(.*?)</tr>', page.split('id="learner-exercises"')[1], re.S)
    assert cells is not None and 'class="num">1</td>' in cells.group(1) and "hidden until due" in cells.group(1)


def test_an_excused_exercise_shows_no_late_rule(term: Term) -> None:
    _course(term, "full")
    term.clock.now = DUE + DAY  # late: the rule would read "-10% per day"
    excused = term.client.put(f"/api/v1/courses/{COURSE}/scores/ann/actor-loss/excuse", json={"reason": "illness"},
                              headers=term.instructor)
    assert excused.status_code == 200, excused.text
    listing = term.client.get(f"/api/v1/courses/{COURSE}/exercises", headers=term.tokens["ann"]).json()
    assert listing["exercises"][0]["excused"] is True
    text = plain_text(exercises_tables([listing], 120), 120)
    assert "excused" in text and "late:" not in text and "-10%" not in text
    _log_in(term)
    assert _row(term.client.get("/dashboard/learners/ann").text, "exercise-dates")["late-rule"] == "excused: no late penalty"


def _form(term: Term) -> dict[str, str]:
    page = term.client.get("/dashboard/learners/ann").text
    fields = dict(re.findall(r'<input type="hidden" name="(key)" value="([^"]*)">', page))
    fields.update(re.findall(r'action="/dashboard/submit\?(csrf)=([^"]*)"', page))
    return fields


def _post(term: Term, fields: dict[str, str], file: tuple[str, bytes] | None) -> Any:
    files = {"file": (file[0], file[1], "text/x-python")} if file else {"file": ("", b"", "application/octet-stream")}
    body = {k: v for k, v in fields.items() if k != "csrf"}
    return term.client.post("/dashboard/submit", params={"csrf": unescape(fields["csrf"])}, data=body, files=files,
                            headers={"Origin": "http://testserver"}, follow_redirects=False)


def test_a_late_upload_asks_first_and_sends_nothing_until_confirmed(term: Term) -> None:
    _course(term, "full")
    _log_in(term)
    term.clock.now = DUE + 3 * HOUR
    fields = _form(term)
    asked = _post(term, {**fields, "course": COURSE}, ("mine.py", SOURCE.encode()))
    assert asked.status_code == 200 and "<h1>Send it late?</h1>" in asked.text
    notice = unescape(re.search(r'<p id="late-notice"[^>]*>(.*?)</p>', asked.text, re.S).group(1))  # type: ignore[union-attr]
    assert notice == ("actor-loss was due on 2026-12-11 17:00:00 CET (Europe/Paris) in rlhf-a: sent now, it loses 10% "
                      "of its score (10% per day started late); submissions close on 2026-12-13 17:00:00 CET (Europe/Paris).")
    assert term.client.get("/api/v1/submissions", headers=term.tokens["ann"]).json() == []  # nothing sent yet
    # the button sends the form the page holds: the same key, the source carried back byte for byte
    confirm = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', asked.text))
    assert confirm["late"] == LATE_CONFIRMED and confirm["key"] == fields["key"] and confirm["filename"] == "mine.py"
    confirm["csrf"] = re.search(r'action="/dashboard/submit\?csrf=([^"]*)"', asked.text).group(1)  # type: ignore[union-attr]
    sent = _post(term, confirm, None)
    assert sent.status_code == 303 and sent.headers["location"].startswith("/dashboard/submissions/"), sent.text
    [row] = term.client.get("/api/v1/submissions", headers=term.tokens["ann"]).json()
    detail = term.client.get(f"/api/v1/submissions/{row['id']}", headers=term.tokens["ann"]).json()
    assert detail["late"] and detail["penalty_percent"] == 10 and detail["filename"] == "mine.py"
    # the browser's second click (the same form again) is the same submission, not a second one
    assert _post(term, confirm, None).headers["location"] == sent.headers["location"]
    with term.api.state.session_factory() as session:  # the stored source is what was uploaded, CRLF line ends too
        assert session.get(Submission, row["id"]).source == SOURCE  # type: ignore[union-attr]
    # on time, nothing is asked
    term.clock.now = DUE - HOUR
    on_time = _post(term, {**_form(term), "course": COURSE}, ("mine.py", SOURCE.encode()))
    assert on_time.status_code == 303


def test_a_forged_confirmation_is_refused_in_one_sentence(term: Term) -> None:
    _course(term, "full")
    _log_in(term)
    term.clock.now = DUE + HOUR
    fields = {**_form(term), "course": COURSE, "exercise": "actor-loss", "late": LATE_CONFIRMED,
              "late_source": "not base64!", "filename": "mine.py"}
    refused = _post(term, fields, None)
    assert refused.status_code == 400 and "The confirmation form was changed" in refused.text


def test_the_starters_download_as_ppo_submit_starter_writes_them(term: Term) -> None:
    _course(term)
    _log_in(term)
    term.clock.now = RELEASE - HOUR  # not released yet: the same 404 as the API's
    assert term.client.get("/dashboard/starter/actor-loss.py").status_code == 404
    term.clock.now = RELEASE + HOUR
    detail = term.client.get("/api/v1/exercises/actor-loss", headers=term.tokens["ann"]).json()
    py = term.client.get("/dashboard/starter/actor-loss.py")
    assert py.status_code == 200 and py.text == detail["starter"]
    assert py.headers["content-disposition"] == 'attachment; filename="actor_loss.py"'
    notebook = term.client.get("/dashboard/starter/actor-loss.ipynb")
    assert notebook.status_code == 200 and notebook.headers["content-type"].startswith("application/x-ipynb+json")

    def cells(text: str) -> list[tuple[str, str]]:  # a cell's id is drawn at random each time
        return [(c["cell_type"], "".join(c["source"])) for c in json.loads(text)["cells"]]

    assert cells(notebook.text) == cells(starter_notebook(detail["starter"], detail["function"]))
    assert cells(notebook.text)[-1][1].endswith("notebook.submit(compute_actor_loss)")
    for bad in ("actor-loss.exe", "actor-loss", "nope.py", "x" * 80 + ".py"):
        assert term.client.get(f"/dashboard/starter/{bad}").status_code == 404, bad


@pytest.fixture
def live(settings: Settings, clock: FakeClock) -> Iterator[tuple[Term, str]]:
    """A real server on a free port (uvicorn over HTTP) with the fake clock and a grader that answers 75."""
    settings = settings.model_copy(update={"RATE_LIMIT": "1000/minute", "MAX_QUEUED_PER_USER": 100})
    app = create_app(settings, FakeGrader().factory, clock=clock)  # type: ignore[arg-type]
    with live_server(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        state = app.state.grader
        with transaction(state.session_factory) as session:
            token = create_user(session, "prof", Role.INSTRUCTOR, settings.secret_bytes).token
        yield Term(Api(client, state), clock, {"Authorization": f"Bearer {token}"}), url  # type: ignore[arg-type]


def _ppo_submit(url: str, token: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PPO_GRADER_URL": url, "PPO_GRADER_TOKEN": token,
               "XDG_CONFIG_HOME": str(tmp_path / "config"), "NO_COLOR": "1", "COLUMNS": "120"}
    return subprocess.run([str(Path(sys.executable).parent / "ppo-submit"), *args], env=environ, capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)


def test_ppo_submit_board_shows_the_courses_board_by_pseudonym(live: tuple[Term, str], tmp_path: Path) -> None:
    """``ppo-submit board [SLUG]`` through the real server: the API's rows, classmates by the
    course's pseudonym, the learner's own row marked; a hidden-until-due exercise's board is refused."""
    term, url = live
    term.course(COURSE)
    term.enroll(COURSE, "ann", "bob")
    term.publish(COURSE, release_at=RELEASE, due_at=DUE)
    term.publish(COURSE, "gae", release_at=RELEASE, due_at=DUE, feedback_policy="hidden-until-due")
    for name in ("ann", "bob"):
        term.submit_at(RELEASE + HOUR, name, course=COURSE)
    token = term.tokens["ann"]["Authorization"].removeprefix("Bearer ")
    api = term.client.get("/api/v1/leaderboard", params={"course": COURSE}, headers=term.tokens["ann"]).json()
    shown = _ppo_submit(url, token, tmp_path, "board")
    assert shown.returncode == 0, shown.stderr
    assert "Board of rlhf-a · overall" in shown.stdout and "Bob" not in shown.stdout and "bob" not in shown.stdout
    for entry in api["entries"]:
        assert entry["learner"] in shown.stdout
    mine = next(line for line in shown.stdout.splitlines() if "← you" in line)
    assert next(e for e in api["entries"] if e["is_you"])["learner"] in mine
    one = _ppo_submit(url, token, tmp_path, "board", "actor-loss", "--course", COURSE)
    assert one.returncode == 0 and "Board of rlhf-a · actor-loss" in one.stdout and "75" in one.stdout
    held = _ppo_submit(url, token, tmp_path, "board", "gae")
    assert held.returncode != 0 and "hidden until every learner's due date" in held.stderr
    # ppo-submit exercises says the same attempts as the learner's page
    listed = _ppo_submit(url, token, tmp_path, "exercises")
    assert listed.returncode == 0 and "attempts 1" in listed.stdout
