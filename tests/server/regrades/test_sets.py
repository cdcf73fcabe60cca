"""Regrade sets with a controllable grader, on SQLite and PostgreSQL: versions on verdicts,
what is stale, a preview learners never see, apply (once, in one transaction, late penalties
kept), cancel, and an apply killed halfway."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from typing import Any

from sqlalchemy import select, text, update

from exercises.registry import get_exercise
from exercises.versions import content_version, grader_version
from server.config import Settings
from server.db import transaction
from server.models import DEFAULT_COURSE_ID, AuditEvent, Course, RegradeResult, RegradeSet, Role, SupersededVerdict
from tests.server.regrades.conftest import Cli
from tests.server.conftest import Api, StartApi
from tests.server.fakes import FakeGrader, FakeReport

LEARNERS = ("ann", "bob", "cy")


def _graded(api: Api, headers: dict[str, str], count: int) -> list[int]:
    ids = [api.submit(headers).json()["id"] for _ in range(count)]
    for i in ids:
        api.wait_done(headers, i)
    return ids


def _wait_state(api: Api, prof: dict[str, str], set_id: int, state: str = "ready", timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = api.client.get(f"/api/v1/regrades/{set_id}", headers=prof).json()
        if body["regrade"]["state"] == state:
            return body
        time.sleep(0.05)
    raise AssertionError(f"regrade {set_id} not {state}: {body}")


def _page(api: Api, headers: dict[str, str], url: str) -> Any:
    """A dashboard page as the token's owner sees it (logged in through the login form)."""
    api.client.cookies.clear()
    token = headers["Authorization"].removeprefix("Bearer ")
    assert api.client.post("/login", data={"token": token}, follow_redirects=False).status_code == 303
    try:
        return api.client.get(url)
    finally:
        api.client.cookies.clear()


def _snapshot(api: Api) -> dict[str, Any]:
    """Everything a learner or a board reads: rows, checks, best scores."""
    with api.state.session_factory() as session:
        return {
            "submissions": session.execute(text(
                "SELECT id, verdict, score, counted_score, penalty_percent, late_seconds, message, content_version "
                "FROM submissions ORDER BY id")).all(),
            "checks": session.execute(text("SELECT submission_id, check_id, passed FROM check_results ORDER BY id")).all(),
            "best": session.execute(text("SELECT * FROM best_scores ORDER BY course_id, user_id, exercise")).all(),
        }


def test_a_new_verdict_carries_both_versions_and_old_ones_are_stale(start_api: StartApi, cli: Cli) -> None:
    api = start_api()
    learner = api.user("ann")
    [first, second] = _graded(api, learner, 2)
    body = api.client.get(f"/api/v1/submissions/{first}", headers=learner).json()
    assert (body["content_version"], body["grader_version"]) == (content_version(get_exercise("actor-loss")), grader_version())
    status = cli("regrade", "status")
    assert status.exit_code == 0, status.output
    assert "0 stale verdict(s)" in status.output
    with transaction(api.state.session_factory) as session:  # as migration 0013 leaves rows from before versions
        session.execute(text("UPDATE submissions SET content_version = 'unknown', grader_version = 'unknown' WHERE id = :i"), {"i": first})
    status = cli("regrade", "status")
    assert "1 stale verdict(s)" in status.output
    row = next(line for line in status.output.splitlines() if "actor-loss" in line)
    # 2 counted verdicts, 1 stale, and that one is ann's board score (her first 75 came first).
    assert [c.strip() for c in row.split("│")[1:6]] == ["default", "actor-loss", "2", "1", "1"], row
    instructor = api.user("prof", Role.INSTRUCTOR)
    page = _page(api, instructor, "/dashboard/exercises/actor-loss")
    assert "1 of 2 counted verdicts" in page.text, page.text[:2000]
    page = _page(api, instructor, f"/dashboard/submissions/{second}")
    assert content_version(get_exercise("actor-loss")) in page.text


def test_preview_is_invisible_to_learners_then_apply_changes_scores_once(start_api: StartApi, cli: Cli) -> None:
    grader = FakeGrader()  # 75 points, the "clip" check failing
    api = start_api(grader_factory=grader.factory)
    prof = api.user("prof", Role.INSTRUCTOR)
    learners = {name: api.user(name) for name in LEARNERS}
    ids = {name: _graded(api, headers, 2) for name, headers in learners.items()}
    with api.state.session_factory() as session:  # every time a person reads is in the course's zone
        session.execute(update(Course).where(Course.id == DEFAULT_COURSE_ID).values(time_zone="America/New_York"))
        session.commit()
    before = _snapshot(api)

    # The fix: the clip check was wrong, and passes now.
    grader.report = FakeReport(score=100.0, message="4 of 4 checks passed.", checks=[
        c if c.passed else type(c)(c.name, c.weight, True, "ok", None, check_id=c.check_id) for c in FakeReport().checks])
    made = api.client.post("/api/v1/regrades", json={"exercise": "actor-loss", "all_versions": True, "learner": "ann"}, headers=prof)
    assert made.status_code == 202, made.text
    set_id = made.json()["id"]
    diff = _wait_state(api, prof, set_id)
    assert sorted(c["submission"] for c in diff["changed"]) == ids["ann"]
    assert (diff["up"], diff["down"], diff["same"]) == (2, 0, 0)
    assert diff["checks"] == [{"id": "actor-loss/clip", "now_failing": 0, "now_passing": 2}]
    assert diff["mistakes"] == [{"id": "actor-loss/max-for-min", "now_failing": 0, "now_passing": 2}]
    assert [(s["learner"], s["old_score"], s["new_score"], s["old_rank"], s["new_rank"]) for s in diff["learners"]] == [
        ("ann", 75.0, 100.0, 1, 1)]  # ann leads on the tie-break already (earliest); her score moves

    # Learners see nothing of it: not the set, not the new scores.
    for name, headers in learners.items():
        assert api.client.get(f"/api/v1/regrades/{set_id}", headers=headers).status_code == 403
        assert api.client.get("/api/v1/regrades", headers=headers).status_code == 403
        mine = api.client.get(f"/api/v1/submissions/{ids[name][0]}", headers=headers).json()
        assert (mine["score"], mine["regrades"]) == (75.0, [])
    assert _page(api, learners["ann"], f"/dashboard/regrades/{set_id}").status_code == 404
    shown = _page(api, prof, f"/dashboard/regrades/{set_id}")
    assert shown.status_code == 200 and "2</strong> up" in shown.text and "actor-loss/clip" in shown.text
    assert re.search(r"Requested</th><td><time [^>]+>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d E[SD]T</time>", shown.text)
    assert _snapshot(api) == before

    # A reason learners would read that cannot be stored (a NUL) or shows nothing: refused, nothing applied.
    for reason in ("a \u0000 b", "\u200b\ufeff "):
        refused = api.client.post(f"/api/v1/regrades/{set_id}/apply", json={"reason": reason}, headers=prof)
        assert refused.status_code == 422 and "Say why" in refused.text, refused.text
    assert _snapshot(api) == before

    applied = cli("regrade", "apply", str(set_id), "--reason", "The clip check was too strict.")
    assert applied.exit_code == 0, applied.output
    again = cli("regrade", "apply", str(set_id), "--reason", "twice")
    assert again.exit_code == 2 and "applied already" in again.output
    assert api.client.post(f"/api/v1/regrades/{set_id}/cancel", headers=prof).status_code == 409

    ann = api.client.get(f"/api/v1/submissions/{ids['ann'][0]}", headers=learners["ann"]).json()
    assert (ann["score"], ann["counted_score"]) == (100.0, 100.0)
    [note] = ann["regrades"]
    assert (note["regrade"], note["reason"], note["old_score"], note["new_score"]) == (set_id, "The clip check was too strict.", 75.0, 100.0)
    history = api.client.get("/api/v1/submissions", headers=learners["ann"]).json()
    assert all(item["regrades"][0]["new_score"] == 100.0 for item in history)
    board = api.client.get("/api/v1/leaderboard?exercise=actor-loss", headers=prof).json()
    assert [(r["name"], r["board_score"]) for r in board["entries"]][:1] == [("ann", 100.0)]
    with api.state.session_factory() as session:
        old = session.scalars(select(SupersededVerdict).order_by(SupersededVerdict.id)).all()
        assert [(o.submission_id, o.set_id, o.score) for o in old] == [(i, set_id, 75.0) for i in ids["ann"]]
    # Bob's and Cy's rows did not move.
    after = _snapshot(api)
    assert [r for r in after["submissions"] if r[0] not in ids["ann"]] == [r for r in before["submissions"] if r[0] not in ids["ann"]]
    page = _page(api, learners["ann"], f"/dashboard/submissions/{ids['ann'][0]}")
    assert "The clip check was too strict." in page.text
    regraded = re.search(r'<section id="regrades">.*?</section>', page.text, re.S)
    assert regraded and re.search(r"\d\d:\d\d:\d\d E[SD]T</time>", regraded.group(0))  # not UTC beside EST


def test_cancel_changes_nothing_and_keep_higher_never_lowers(start_api: StartApi, cli: Cli) -> None:
    grader = FakeGrader()
    api = start_api(grader_factory=grader.factory)
    prof = api.user("prof", Role.INSTRUCTOR)
    learner = api.user("ann")
    ids = _graded(api, learner, 2)
    before = _snapshot(api)
    grader.report = FakeReport(score=40.0)
    made = cli("regrade", "preview", "--exercise", "actor-loss", "--all-versions", "--wait")
    assert made.exit_code == 0, made.output
    set_id = int(made.stdout.strip().splitlines()[0])  # the id alone on the first stdout line
    assert "Scores: 0 up, 2 down, 0 same" in made.output
    cancelled = cli("regrade", "cancel", str(set_id))
    assert cancelled.exit_code == 0, cancelled.output
    assert _snapshot(api) == before
    with api.state.session_factory() as session:
        assert session.scalar(select(RegradeSet.state).where(RegradeSet.id == set_id)) == "cancelled"
        assert session.scalars(select(RegradeResult).where(RegradeResult.set_id == set_id)).all() == []
    refused = cli("regrade", "apply", str(set_id), "--reason", "after a cancel")
    assert refused.exit_code == 2 and "cancelled already" in refused.output

    second = api.client.post("/api/v1/regrades", json={"exercise": "actor-loss", "all_versions": True}, headers=prof).json()["id"]
    _wait_state(api, prof, second)
    higher = api.client.post(f"/api/v1/regrades/{second}/apply", json={"reason": "tighter", "keep": "higher"}, headers=prof)
    assert higher.status_code == 200, higher.text
    assert higher.json()["learners"] == []
    assert _snapshot(api)["submissions"] == before["submissions"]  # 40 < 75: nobody loses points
    assert api.client.get(f"/api/v1/submissions/{ids[0]}", headers=learner).json()["regrades"] == []
    with api.state.session_factory() as session:  # both in the audit log, with who did them
        logged = session.execute(select(AuditEvent.action, AuditEvent.actor, AuditEvent.target).order_by(AuditEvent.id)).all()
    assert [(a, who.startswith("cli:") or who, t) for a, who, t in logged] == [
        ("regrade.cancel", True, f"regrade {set_id} (actor-loss)"),
        ("regrade.apply", "prof", f"regrade {second} (actor-loss)"),
    ]


def test_a_late_penalty_stays_as_accepted(start_api: StartApi, settings: Settings) -> None:
    grader = FakeGrader()
    api = start_api(grader_factory=grader.factory)
    prof = api.user("prof", Role.INSTRUCTOR)
    learner = api.user("ann")
    [late] = _graded(api, learner, 1)
    with transaction(api.state.session_factory) as session:  # accepted two days late at -10% a day
        session.execute(text("UPDATE submissions SET late_seconds = 172800, penalty_percent = 20, counted_score = 60 WHERE id = :i"), {"i": late})
        session.execute(text("UPDATE best_scores SET counted_score = 60"))
    grader.report = FakeReport(score=100.0)
    set_id = api.client.post("/api/v1/regrades", json={"exercise": "actor-loss", "all_versions": True}, headers=prof).json()["id"]
    diff = _wait_state(api, prof, set_id)
    assert [(c["old_counted_score"], c["new_counted_score"]) for c in diff["changed"]] == [(60.0, 80.0)]
    assert api.client.post(f"/api/v1/regrades/{set_id}/apply", json={"reason": "fixed"}, headers=prof).status_code == 200
    row = api.client.get(f"/api/v1/submissions/{late}", headers=learner).json()
    assert (row["score"], row["counted_score"], row["late_seconds"], row["penalty_percent"]) == (100.0, 80.0, 172800, 20.0)


def test_an_apply_killed_halfway_leaves_nothing_half_applied(start_api: StartApi, settings: Settings) -> None:
    grader = FakeGrader()
    api = start_api(grader_factory=grader.factory)
    prof = api.user("prof", Role.INSTRUCTOR)
    for name in LEARNERS:
        _graded(api, api.user(name), 2)
    grader.report = FakeReport(score=10.0, checks=[])
    set_id = api.client.post("/api/v1/regrades", json={"exercise": "actor-loss", "all_versions": True}, headers=prof).json()["id"]
    _wait_state(api, prof, set_id)
    before = _snapshot(api)
    env = {**os.environ, "PPO_GRADER_DATABASE_URL": settings.DATABASE_URL, "PPO_GRADER_TEST_KILL_IN_APPLY": "1"}
    command = [sys.executable, "-m", "server.cli", "regrade", "apply", str(set_id), "--reason", "fix"]
    killed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert killed.returncode == -9, killed.stderr  # SIGKILL, with half of the rows written and not committed
    assert _snapshot(api) == before
    with api.state.session_factory() as session:
        assert session.scalar(select(RegradeSet.state).where(RegradeSet.id == set_id)) == "ready"
        assert session.scalars(select(SupersededVerdict)).all() == []
    env.pop("PPO_GRADER_TEST_KILL_IN_APPLY")
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)  # after the "restart"
    assert done.returncode == 0, done.stderr
    after = _snapshot(api)
    assert {r[2] for r in after["submissions"]} == {10.0}
    assert {b.best_score for b in after["best"] if b.attempts} == {10.0}


def test_a_nul_in_a_previews_course_or_learner_names_nothing(api: Api) -> None:
    """PostgreSQL refuses a NUL in a query: the course and the learner are then no one's (404),
    never a 500 (the OpenAPI fuzz found it on PostgreSQL; a lone surrogate is pydantic's 422)."""
    prof = api.user("prof", Role.INSTRUCTOR)
    for body in ('{"exercise": "actor-loss", "course": "c\\u0000"}', '{"exercise": "actor-loss", "learner": "a\\u0000"}'):
        refused = api.client.post("/api/v1/regrades", content=body,
                                  headers={**prof, "Content-Type": "application/json"})
        assert refused.status_code == 404, (body, refused.text)
