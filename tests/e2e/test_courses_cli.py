"""A course's late policy through the real server and the real `ppo-submit`: a late
submission warns, is accepted and flagged; after the hard close it is refused with the date."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from exercises.registry import get_exercise
from tests.e2e.conftest import BIN

pytestmark = pytest.mark.slow


def ppo_grader(server, *args: str, stdin: str | None = None) -> str:  # type: ignore[no-untyped-def]
    done = subprocess.run([str(BIN / "ppo-grader"), *args], env=server.env, capture_output=True, text=True,
                          timeout=60, input=stdin)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_late_then_closed(server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    now = datetime.now(UTC).replace(microsecond=0)
    ppo_grader(server, "courses", "create", "e2e-term", "--time-zone", "Europe/Paris")
    roster = tmp_path / "roster.csv"
    roster.write_text("name,display_name\nlena,Lena L.\n")
    token = ppo_grader(server, "courses", "enroll", "e2e-term", str(roster)).splitlines()[1].split(",")[-1]
    ppo_grader(server, "sets", "publish", "e2e-term", "actor-loss", "--release", (now - timedelta(days=2)).isoformat(),
               "--due", (now - timedelta(hours=1)).isoformat(), "--close", (now + timedelta(days=1)).isoformat(),
               "--penalty", "10", "--per", "day")

    listing = server.submit(token, "exercises")
    assert listing.returncode == 0, listing.stderr
    assert "e2e-term" in listing.stdout and "late by 1h" in listing.stdout

    solution = tmp_path / "solution.py"
    solution.write_text(get_exercise("actor-loss").reference_source)
    unanswered = server.submit(token, str(solution), "--json")  # stdin closed: warned, not sent
    assert unanswered.returncode == 2
    assert "warning:" in unanswered.stderr and "was due" in unanswered.stderr and "pass --yes" in unanswered.stderr

    sent = server.submit(token, str(solution), "--json", "--yes")
    assert sent.returncode == 0, sent.stderr
    assert "warning:" in sent.stderr
    result = json.loads(sent.stdout)
    assert (result["course"], result["late"], result["score"], result["penalty_percent"], result["counted_score"]) == (
        "e2e-term", True, 100, 10, 90,
    )
    assert "score that counts is 90" in sent.stderr

    close = now - timedelta(minutes=1)
    ppo_grader(server, "sets", "publish", "e2e-term", "actor-loss", "--release", (now - timedelta(days=2)).isoformat(),
               "--due", (now - timedelta(hours=1)).isoformat(), "--close", close.isoformat(),
               "--penalty", "10", "--per", "day")  # the same late rule: publishing again re-prices
    refused = server.submit(token, str(solution), "--yes")
    assert refused.returncode == 2
    local = close.astimezone(ZoneInfo("Europe/Paris"))
    assert f"closed on {local:%Y-%m-%d %H:%M:%S} {local.tzname()} (Europe/Paris)" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr and len(refused.stderr.strip().splitlines()) == 1

    book = list(csv.DictReader(io.StringIO(ppo_grader(server, "courses", "gradebook", "e2e-term"))))
    row = book[0]
    assert (row["learner"], row["display_name"], row["exercise"], row["counted_score"], row["attempts"]) == (
        "lena", "Lena L.", "actor-loss", "90", "1")
    assert (row["raw_best_score"], row["counted_submission_id"], row["counted_late"]) == ("100", str(result["id"]), "yes")
    assert row["described"].startswith("90 (raw 100, late ")  # the score that counts, as every view writes it
