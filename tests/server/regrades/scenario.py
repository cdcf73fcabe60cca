"""The acceptance scenario of a regrade, shared by the SQLite and PostgreSQL runs.

25 learners hand in 50 real files of ``kl-penalty`` while the catalogue grades it with a wrong
reference (k2 without its 0.5, tests/server/regrades/catalogue.py): the correct files lose points
and the files with the known mistake "k2 without 0.5" score 100. The reference is then fixed,
the service restarted, and a preview must name exactly the files whose verdict moves (both of
those groups; syntax errors and unfinished starters stay as they were).
"""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import text

from exercises.registry import get_exercise
from server.db import SessionFactory
from server.courses.best_scores import backfill_best_scores
from tests.server.regrades.catalogue import RIGHT, SLUG, WRONG

LEARNERS = [f"l{i:02d}" for i in range(25)]


def sources() -> dict[str, str]:
    """The four kinds of file handed in."""
    exercise = get_exercise(SLUG)
    correct = exercise.reference_source
    return {
        "correct": correct,
        "no_half": correct.replace(RIGHT, WRONG),
        "syntax": "def compute_kl_penalty(log_probs, ref_log_probs, kind='k1':\n    return log_probs\n",
        "starter": exercise.starter,
    }


def plan(index: int) -> tuple[str, str]:
    """Learner ``index``'s two files, in the order handed in."""
    if index < 10:
        return "correct", "no_half"
    if index < 18:
        return "syntax", "correct"
    return "syntax", "starter"


@dataclass
class Handed:
    """What was handed in: submission id -> (learner, kind)."""

    files: dict[int, tuple[str, str]] = field(default_factory=dict)

    def of(self, *kinds: str) -> set[int]:
        return {sid for sid, (_, kind) in self.files.items() if kind in kinds}


def wait(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def all_done(sessions: SessionFactory) -> bool:
    with sessions() as session:
        return not session.scalar(text("SELECT count(*) FROM submissions WHERE status <> 'done'"))


def snapshot(sessions: SessionFactory) -> dict[str, Any]:
    """What learners, boards and gradebooks read."""
    with sessions() as session:
        return {
            "submissions": session.execute(text(
                "SELECT id, verdict, score, counted_score, content_version FROM submissions ORDER BY id")).all(),
            "checks": session.execute(text("SELECT submission_id, check_id, passed FROM check_results ORDER BY id")).all(),
            "best": session.execute(text("SELECT * FROM best_scores ORDER BY course_id, user_id, exercise")).all(),
        }


def _messages(sessions: SessionFactory, ids: list[int]) -> list[str]:
    with sessions() as session:
        listed = ",".join(str(int(i)) for i in ids or [0])
        return list(session.scalars(text(f"SELECT message FROM regrade_results WHERE submission_id IN ({listed})")))


def gradebook(client: TestClient, prof: dict[str, str]) -> dict[str, float]:
    body = client.get("/api/v1/gradebook.csv", headers=prof)
    assert body.status_code == 200, body.text
    rows = list(csv.reader(io.StringIO(body.text)))
    head = rows[0]
    return {r[0]: float(r[head.index("counted_score")]) for r in rows[1:] if r[head.index("exercise")] == SLUG}


def board(client: TestClient, prof: dict[str, str]) -> dict[str, tuple[int, float]]:
    page = client.get(f"/api/v1/leaderboard?exercise={SLUG}&limit=100", headers=prof).json()
    return {e["name"]: (e["rank"], e["board_score"]) for e in page["entries"]}


def best_scores_consistent(sessions: SessionFactory) -> None:
    """``best_scores`` equals a rebuild from the submission rows (what apply must leave)."""
    with sessions() as session:
        kept = session.execute(text("SELECT * FROM best_scores ORDER BY course_id, user_id, exercise")).all()
        backfill_best_scores(session)
        rebuilt = session.execute(text("SELECT * FROM best_scores ORDER BY course_id, user_id, exercise")).all()
        session.rollback()
    assert kept == rebuilt


def check_preview_apply_cancel(client: TestClient, prof: dict[str, str], learner: dict[str, str],
                               sessions: SessionFactory, handed: Handed, cli: Callable[..., Any]) -> None:
    """Steps 3 to 5 of the acceptance: preview names exactly the changed files, apply makes
    boards and gradebook follow, a cancelled set changes nothing."""
    status = cli("regrade", "status", "--exercise", SLUG)
    assert status.exit_code == 0 and "50 stale verdict(s)" in status.output, status.output
    before = snapshot(sessions)
    board_before = board(client, prof)
    made = cli("regrade", "preview", "--exercise", SLUG)
    assert made.exit_code == 0, made.output
    set_id = int(made.stdout.strip().splitlines()[0])

    def ready() -> bool:
        body = client.get(f"/api/v1/regrades/{set_id}", headers=prof).json()
        assert "regrade" in body, body
        return bool(body["regrade"]["state"] == "ready")

    wait(ready, 600, "the regrade preview")
    diff = client.get(f"/api/v1/regrades/{set_id}", headers=prof).json()
    changed = {c["submission"] for c in diff["changed"]}
    assert changed == handed.of("correct", "no_half")  # exactly the files whose verdict moved
    assert diff["failed"] == [], _messages(sessions, diff["failed"])
    assert (diff["up"], diff["down"], diff["same"]) == (len(handed.of("correct")), len(handed.of("no_half")),
                                                       len(handed.of("syntax", "starter")))
    assert any("k2" in s["id"] for s in diff["checks"]), diff["checks"]
    assert {c["submission"] for c in diff["largest"]} <= changed and diff["largest"]
    moved = {s["learner"] for s in diff["learners"]}
    # Their correct file now counts 100. l00-l09 keep 100 and their ranks (their correct file
    # came first); l18-l24 keep 0.
    assert moved == {f"l{i:02d}" for i in range(10, 18)}
    # Nothing a learner sees has changed, and the set is not theirs to read.
    assert snapshot(sessions) == before
    assert client.get(f"/api/v1/regrades/{set_id}", headers=learner).status_code == 403

    applied = cli("regrade", "apply", str(set_id), "--reason", "The k2 reference lacked its 0.5.")
    assert applied.exit_code == 0, applied.output
    assert cli("regrade", "apply", str(set_id), "--reason", "again").exit_code == 2
    after = snapshot(sessions)
    rows = {r[0]: r for r in after["submissions"]}
    for sid in handed.of("correct"):
        assert rows[sid][1:3] == ("graded", 100.0), rows[sid]
    for sid in handed.of("no_half"):
        assert rows[sid][2] is not None and rows[sid][2] < 100
    # The unchanged ones keep their verdict; they only take the new version (no longer stale).
    assert [r[:4] for r in after["submissions"] if r[0] not in changed] == [r[:4] for r in before["submissions"] if r[0] not in changed]
    assert len({r[4] for r in after["submissions"]}) == 1
    best_scores_consistent(sessions)
    # Boards and the gradebook follow the submission rows: each learner's best counted score.
    truth: dict[str, float] = {}
    for sid, (name, _) in handed.files.items():
        score = rows[sid][3] if rows[sid][1] == "graded" else 0.0
        truth[name] = max(truth.get(name, 0.0), score or 0.0)
    assert {name: best for name, (_, best) in board(client, prof).items()} == truth
    assert gradebook(client, prof) == truth
    assert board(client, prof) != board_before
    assert cli("regrade", "status", "--exercise", SLUG).output.count("0 stale verdict(s)") == 1
    with sessions() as session:  # the old verdicts stay, marked with the set that replaced them
        assert session.scalar(text("SELECT count(*) FROM superseded_verdicts WHERE set_id = :s"), {"s": set_id}) == len(changed)
    mine = client.get(f"/api/v1/submissions/{min(handed.of('correct'))}", headers=prof).json()
    assert [n["reason"] for n in mine["regrades"]] == ["The k2 reference lacked its 0.5."]

    # Another set, cancelled: nothing changes.
    settled, board_applied = snapshot(sessions), board(client, prof)
    other = cli("regrade", "preview", "--exercise", SLUG, "--learner", "l03", "--all-versions")
    assert other.exit_code == 0, other.output
    other_id = int(other.stdout.strip().splitlines()[0])
    wait(lambda: client.get(f"/api/v1/regrades/{other_id}", headers=prof).json()["regrade"]["state"] == "ready", 300, "the second set")
    assert client.get(f"/api/v1/regrades/{other_id}", headers=prof).json()["changed"] == []
    assert cli("regrade", "cancel", str(other_id)).exit_code == 0
    assert snapshot(sessions) == settled
    assert board(client, prof) == board_applied
    assert gradebook(client, prof) == truth
