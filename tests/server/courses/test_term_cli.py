"""A course team runs a term with the ``ppo-grader`` command line only: two sections, an
exercise open Monday and closed Friday, one extension, a gradebook exported for the LMS."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from pathlib import Path

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from server.app import create_app
from server.cli import app
from server.config import Settings
from tests.server.conftest import Api
from tests.server.courses.conftest import FakeClock
from tests.server.fakes import FakeGrader

SATURDAY = datetime(2026, 12, 12, 10, 0, tzinfo=UTC)


def ppo_grader(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_a_term_with_two_sections_without_touching_the_database(env: Settings, tmp_path: Path) -> None:
    ppo_grader("users", "add", "prof", "--role", "instructor")
    for section in ("rlhf-a", "rlhf-b"):
        ppo_grader("courses", "create", section, "--title", f"RLHF {section[-1].upper()}",
                   "--time-zone", "Europe/Paris", "--instructor", "prof")
    roster = tmp_path / "roster.csv"
    roster.write_text("name,display_name,course\nann,Ann A.,rlhf-a\ncat,Cat C.,rlhf-a\nbob,Bob B.,rlhf-b\n")
    tokens = {row["name"]: row["token"] for row in csv.DictReader(io.StringIO(ppo_grader("users", "import", str(roster))))}
    assert set(tokens) == {"ann", "cat", "bob"}
    for section in ("rlhf-a", "rlhf-b"):  # Monday 9:00 to Friday 17:00, Paris time
        ppo_grader("sets", "publish", section, "actor-loss", "--release", "2026-12-07 09:00",
                   "--due", "2026-12-11 17:00", "--close", "2026-12-11 17:00")
    ppo_grader("extensions", "grant", "rlhf-a", "ann", "actor-loss", "--due", "2026-12-14 09:00")
    listing = ppo_grader("sets", "list", "rlhf-a")
    assert "2026-12-07 09:00:00 CET" in listing and "2026-12-11 17:00:00 CET" in listing
    assert "rlhf-a" in ppo_grader("courses", "list")

    clock = FakeClock(SATURDAY)
    with TestClient(create_app(env, FakeGrader().factory, clock=clock)) as client:
        def submit(name: str):  # type: ignore[no-untyped-def]
            return client.post("/api/v1/submissions", json={"exercise": "actor-loss", "source": "x = 1\n"},
                               headers={"Authorization": f"Bearer {tokens[name]}"})

        assert submit("ann").status_code == 202  # her extension runs to Monday
        for name in ("cat", "bob"):
            refused = submit(name)
            assert refused.status_code == 403 and "2026-12-11 17:00:00 CET" in refused.json()["detail"]
        ann_id = submit("ann").json()["id"]
        Api(client, client.app.state.grader).wait_done({"Authorization": f"Bearer {tokens['ann']}"}, ann_id)  # type: ignore[attr-defined]

    book = list(csv.DictReader(io.StringIO(ppo_grader("courses", "gradebook", "rlhf-a"))))
    assert [(r["learner"], r["exercise"], r["counted_score"], r["counted_late"]) for r in book] == [
        ("ann", "actor-loss", "75", "no"), ("cat", "actor-loss", "", ""),  # cat never got in: no score, not 0
    ]
    assert [r["learner"] for r in csv.DictReader(io.StringIO(ppo_grader("courses", "gradebook", "rlhf-b")))] == ["bob"]
