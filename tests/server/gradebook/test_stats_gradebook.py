"""Exercise statistics and the gradebook CSV."""

from __future__ import annotations

import csv
import io

from server.models import Role
from tests.server.rows import Rows
from tests.server.conftest import Api

CLIP_WRONG = [("value", True, None), ("clip", False, "max instead of min")]
VALUE_WRONG = [("value", False, "sign flipped"), ("clip", True, None)]
ALL_PASS = [("value", True, None), ("clip", True, None)]


def test_stats_counts_learners_scores_checks_and_mistakes(api: Api, rows: Rows) -> None:
    teacher = api.user("teacher", Role.INSTRUCTOR)
    for name in ("ann", "ben", "cat"):
        api.user(name)
    rows.add("ann", score=50, checks=CLIP_WRONG, minute=1)
    rows.add("ann", score=50, checks=CLIP_WRONG, minute=2)
    rows.add("ann", score=100, checks=ALL_PASS, minute=3)
    rows.add("ben", score=50, checks=CLIP_WRONG, minute=4)
    rows.add("ben", score=None, verdict="crashed", minute=5)
    rows.add("cat", score=None, verdict="internal_error", minute=6)  # not an attempt
    rows.add("teacher", score=5, checks=VALUE_WRONG)  # instructors are not the class
    rows.add("cat", score=None, status="queued", minute=7)

    response = api.client.get("/api/v1/exercises/actor-loss/stats", headers=teacher)
    assert response.status_code == 200, response.text
    stats = response.json()
    assert (stats["submissions"], stats["graded_submissions"]) == (7, 4)
    assert (stats["learners_attempted"], stats["learners_solved"]) == (2, 1)
    buckets = {(b["low"], b["high"]): (b["learners"], b["submissions"]) for b in stats["score_distribution"]}
    assert len(buckets) == 11
    assert buckets[(50, 59)] == (1, 3) and buckets[(100, 100)] == (1, 1) and buckets[(0, 9)] == (0, 0)
    assert stats["checks"] == [
        {"name": "clip", "check_id": None, "runs": 4, "failures": 3, "failure_rate": 0.75},
        {"name": "value", "check_id": None, "runs": 4, "failures": 0, "failure_rate": 0.0},
    ]  # rows stored without ids (as before migration 0007) are counted by their text
    assert stats["mistakes"] == [
        {"mistake_title": "max instead of min", "mistake_id": None, "learners": 2, "submissions": 3,
         "misconception": "max instead of min"}]
    assert stats["misconceptions"] == stats["mistakes"]  # the old names, deprecated, for one release


def test_stats_for_unknown_exercise_is_404_and_learners_get_403(api: Api) -> None:
    teacher = api.user("teacher", Role.INSTRUCTOR)
    assert api.client.get("/api/v1/exercises/nope/stats", headers=teacher).json()["error"] == "ExerciseNotFound"
    learner = api.user("lea")
    assert api.client.get("/api/v1/exercises/actor-loss/stats", headers=learner).status_code == 403
    assert api.client.get("/api/v1/gradebook.csv", headers=learner).status_code == 403


def test_gradebook_csv_has_every_learner_and_exercise(api: Api, rows: Rows) -> None:
    teacher = api.user("teacher", Role.INSTRUCTOR)
    api.user("ann")
    api.user("ben")
    rows.add("ann", score=40, minute=1)
    rows.add("ann", score=100, minute=2)
    rows.add("ann", score=None, verdict="crashed", minute=3)
    rows.add("ann", score=100, minute=4)
    rows.add("teacher", score=100)
    response = api.client.get("/api/v1/gradebook.csv", headers=teacher)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv")
    table = list(csv.DictReader(io.StringIO(response.text)))
    slugs = [e["slug"] for e in api.client.get("/api/v1/exercises", headers=teacher).json()]
    assert [(r["learner"], r["exercise"]) for r in table] == [(n, s) for n in ("ann", "ben") for s in slugs]
    ann = next(r for r in table if r["learner"] == "ann" and r["exercise"] == "actor-loss")
    assert (ann["counted_score"], ann["attempts"]) == ("100", "4")
    assert ann["solved_at"].startswith("2026-01-01T12:02:00")
    ben = next(r for r in table if r["learner"] == "ben" and r["exercise"] == "actor-loss")
    assert (ben["counted_score"], ben["attempts"], ben["solved_at"]) == ("", "0", "")  # never attempted: no score, not 0


def test_gradebook_neutralises_spreadsheet_formulas(api: Api) -> None:
    teacher = api.user("teacher", Role.INSTRUCTOR)
    roster = 'name,display_name\nevil,"=HYPERLINK(""x"")"\n'
    api.client.post("/api/v1/users/import", content=roster, headers=teacher)
    text = api.client.get("/api/v1/gradebook.csv", headers=teacher).text
    assert "'=HYPERLINK" in text
