"""The score that counts in a course, in-process (SQLite and PostgreSQL): a late submission,
an extension granted afterwards, an override and an excuse; every view (scores API as
instructor and learner, both gradebooks, the boards, the statistics, the dashboard's learner
and class pages, ``ppo-grader scores list`` and the export) agrees; corrections are recorded,
reversible, refused to learners and, from the dashboard, protected by the form token."""

from __future__ import annotations

import csv
import io
import re
import zipfile
from html import unescape
from pathlib import Path

import pytest
from typer.testing import CliRunner

from server.cli import app
from server.config import Settings
from tests.server.courses.conftest import CLOSE, DAY, DUE, HOUR, RELEASE, Term

COURSE = "fall-a"


@pytest.fixture
def fall(term: Term) -> Term:
    """fall-a: actor-loss due Friday 17:00 with 10% per started day; gae and whiten open; ann, ben."""
    term.course(COURSE)
    term.enroll(COURSE, "ann", "ben")
    assert term.publish(COURSE, release_at=RELEASE, due_at=DUE, close_at=CLOSE + 3 * DAY, penalty_percent=10).status_code == 200
    for slug in ("gae", "whiten"):
        assert term.publish(COURSE, slug, release_at=RELEASE).status_code == 200
    return term


def _scores(term: Term, headers: dict[str, str], **params: str) -> dict[str, float | None]:
    body = term.client.get(f"/api/v1/courses/{COURSE}/scores", params=params, headers=headers).json()
    return {s["exercise"]: s["counted_score"] for s in body["scores"] if s["learner"] == "ann"}


def _walk(fall: Term) -> None:
    late = fall.submit_at(DUE + HOUR, "ann")  # the fake judge gives 75: 67.5 counts
    assert (late["late"], late["counted_score"]) == (True, 67.5)
    fall.submit_at(DUE - HOUR, "ann", exercise="gae")
    fall.submit_at(DUE - HOUR, "ann", exercise="whiten")
    fall.submit_at(DUE + HOUR, "ben")
    granted = fall.client.put(f"/api/v1/courses/{COURSE}/extensions/ann/actor-loss",
                              json={"due_at": (DUE + 2 * DAY).isoformat()}, headers=fall.instructor)
    assert granted.status_code == 200 and granted.json()["recomputed"] == 1
    over = fall.client.put(f"/api/v1/courses/{COURSE}/scores/ann/gae/override",
                           json={"score": 95, "reason": "graded by hand"}, headers=fall.instructor)
    assert over.status_code == 200 and over.json()["described"] == "95 (override by prof: graded by hand)"
    ex = fall.client.put(f"/api/v1/courses/{COURSE}/scores/ann/whiten/excuse", json={"reason": "medical note"},
                         headers=fall.instructor)
    assert ex.status_code == 200 and ex.json()["counted_score"] is None


EXPECTED = {"actor-loss": 75.0, "gae": 95.0, "whiten": None}


def test_every_view_gives_the_same_score_that_counts(fall: Term, settings: Settings, monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    _walk(fall)
    staff, ann = fall.instructor, fall.tokens["ann"]
    assert _scores(fall, staff, learner="ann") == _scores(fall, ann) == EXPECTED
    assert fall.client.get(f"/api/v1/courses/{COURSE}/scores", params={"learner": "ben"}, headers=ann).status_code == 404

    long = [r for r in csv.DictReader(io.StringIO(
        fall.client.get("/api/v1/gradebook.csv", params={"course": COURSE}, headers=staff).text)) if r["learner"] == "ann"]
    assert {r["exercise"]: float(r["counted_score"]) if r["counted_score"] else None for r in long} == EXPECTED
    assert {r["exercise"]: r["correction"] for r in long} == {"actor-loss": "", "gae": "override", "whiten": "excused"}
    canvas = list(csv.DictReader(io.StringIO(
        fall.client.get("/api/v1/gradebook/canvas.csv", params={"course": COURSE}, headers=staff).text)))
    wide = next(r for r in canvas if r["SIS Login ID"] == "ann")  # after the "Points Possible" row
    assert (wide["PPO clipped actor loss"], wide["Generalized Advantage Estimation"], wide["Masked whitening"]) == (
        "75", "95", "EX")  # excused: Canvas's own mark

    for slug, value in EXPECTED.items():
        board = fall.client.get("/api/v1/leaderboard", params={"course": COURSE, "exercise": slug}, headers=staff).json()
        ranked = {e["name"]: e["board_score"] for e in board["entries"]}
        assert ranked.get("ann") == value  # excused from whiten: not on its board at all
    overall = fall.client.get("/api/v1/leaderboard", params={"course": COURSE}, headers=staff).json()["entries"]
    assert [(e["name"], e["board_score"]) for e in overall] == [("ann", 170.0), ("ben", 67.5)]
    stats = fall.client.get("/api/v1/exercises/actor-loss/stats", params={"course": COURSE}, headers=staff).json()
    assert stats["learners_solved"] == 0 and sum(b["learners"] for b in stats["score_distribution"]) == 2

    fall.client.post("/login", data={"token": staff["Authorization"].split()[1]})
    page = fall.client.get("/dashboard/learners/ann", params={"course": COURSE}).text
    rows = re.findall(r'<tr data-exercise="([^"]+)"><td>.*?</td><td class="num counted">([^<]*)</td>'
                      r'<td class="described">([^<]*)</td>', page, re.S)
    assert {slug: (None if v == "excused" else float(v)) for slug, v, _ in rows} == EXPECTED
    assert {slug: unescape(text) for slug, _, text in rows}["gae"] == "95 (override by prof: graded by hand)"
    assert "medical note" in page and 'name="csrf"' in page
    klass = fall.client.get("/dashboard", params={"course": COURSE}).text
    listed_exercises = re.findall(r'<tr><td><a href="/dashboard/exercises/([a-z-]+)\?course=fall-a">', klass)
    assert listed_exercises == ["actor-loss", "gae", "whiten"]  # the course's three, not eleven
    assert "FALL-A" in klass and "course=fall-a" in klass

    monkeypatch.setenv("PPO_GRADER_DATABASE_URL", settings.DATABASE_URL)
    listed = CliRunner().invoke(app, ["scores", "list", COURSE, "--learner", "ann"], env={"COLUMNS": "200"})
    assert listed.exit_code == 0, listed.output
    assert "95 (override by prof: graded by hand)" in listed.stdout and "excused (by prof: medical note)" in listed.stdout
    target = tmp_path / "out.zip"
    exported = CliRunner().invoke(app, ["submissions", "export", COURSE, "--out", str(target)])
    assert exported.exit_code == 0, exported.output
    with zipfile.ZipFile(target) as archive:
        manifest = list(csv.DictReader(io.StringIO(archive.read("manifest.csv").decode())))
        assert all(archive.read(r["path"]) for r in manifest)
    ann_rows = {r["exercise"]: r for r in manifest if r["learner"] == "ann"}
    assert {k: (float(r["counted_score"]) if r["counted_score"] else None) for k, r in ann_rows.items()} == EXPECTED
    assert ann_rows["actor-loss"]["role"] == "latest+counted" and ann_rows["actor-loss"]["late"] == "no"  # re-priced


def test_corrections_are_recorded_reversible_and_only_for_instructors(fall: Term) -> None:
    _walk(fall)
    ann = fall.tokens["ann"]
    refused = fall.client.put(f"/api/v1/courses/{COURSE}/scores/ann/gae/override", json={"score": 100, "reason": "me"},
                              headers=ann)
    assert refused.status_code == 403
    bad = fall.client.put(f"/api/v1/courses/{COURSE}/scores/ann/dpo-loss/override", json={"score": 100, "reason": "x"},
                          headers=fall.instructor)
    assert bad.status_code == 422 and bad.json()["error"] == "InvalidCourse"  # not in the course
    # A reason the learner would read that cannot be stored (a NUL) or shows nothing (format characters only).
    for reason in ('"a \\u0000 b"', '"\\u200b\\u2060\\ufeff"'):
        for kind, body in (("override", f'{{"score": 90, "reason": {reason}}}'), ("excuse", f'{{"reason": {reason}}}')):
            sent = fall.client.put(f"/api/v1/courses/{COURSE}/scores/ann/gae/{kind}", content=body,
                                   headers={**fall.instructor, "Content-Type": "application/json"})
            assert sent.status_code == 422 and sent.json()["error"] == "InvalidCourse", (kind, reason, sent.text)
    undone = fall.client.delete(f"/api/v1/courses/{COURSE}/scores/ann/gae/override", headers=fall.instructor)
    assert undone.status_code == 200 and undone.json()["revoked"] == 1
    assert undone.json()["score"]["counted_score"] == 75.0  # the graded run counts again
    fall.client.delete(f"/api/v1/courses/{COURSE}/scores/ann/whiten/excuse", headers=fall.instructor)
    assert _scores(fall, ann) == {"actor-loss": 75.0, "gae": 75.0, "whiten": 75.0}
    fall.client.post("/login", data={"token": ann["Authorization"].split()[1]})
    own = fall.client.get("/dashboard/learners/ann").text
    assert "graded by hand" in own and "taken back by prof" in own and 'id="correction-form"' not in own


def test_the_dashboard_form_needs_its_token_and_the_same_origin(fall: Term) -> None:
    _walk(fall)
    landed = fall.client.post("/login", data={"token": fall.instructor["Authorization"].split()[1]},
                              follow_redirects=False)
    assert landed.headers["location"] == "/dashboard"
    home = fall.client.get("/dashboard").text  # the newest course prof teaches, not the empty default one
    assert re.search(r'id="page-course"[^>]*>Course: <b>FALL-A</b>', home)
    page = fall.client.get("/dashboard/learners/ben", params={"course": COURSE}).text
    token = re.search(r'name="csrf" value="([^"]+)"', page)
    assert token is not None
    form = {"course": COURSE, "learner": "ben", "exercise": "actor-loss", "action": "override", "score": "88",
            "reason": "regraded"}
    assert fall.client.post("/dashboard/corrections", data=form, follow_redirects=False).status_code == 403
    forged = fall.client.post("/dashboard/corrections", data={**form, "csrf": token.group(1)},
                              headers={"Origin": "https://evil.example"}, follow_redirects=False)
    assert forged.status_code == 403
    done = fall.client.post("/dashboard/corrections", data={**form, "csrf": token.group(1)}, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == f"/dashboard/learners/ben?course={COURSE}"
    assert _scores_of(fall, "ben")["actor-loss"] == 88.0
    wrong = fall.client.post("/dashboard/corrections", data={**form, "csrf": token.group(1), "score": "200"},
                             follow_redirects=False)
    assert wrong.status_code == 422 and "0 to 100" in wrong.text  # the service's words, a page, no traceback


def _scores_of(term: Term, learner: str) -> dict[str, float | None]:
    body = term.client.get(f"/api/v1/courses/{COURSE}/scores", params={"learner": learner}, headers=term.instructor).json()
    return {s["exercise"]: s["counted_score"] for s in body["scores"]}
