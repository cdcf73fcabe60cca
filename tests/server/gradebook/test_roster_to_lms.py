"""A course team's round trip at the terminal: a roster with email logins, an SIS id and bad
rows (the import fails, naming each bad row), grading, an excuse, then both LMS gradebooks
checked against the columns Canvas's and Moodle's import documentation names."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from fastapi.testclient import TestClient
from typer.testing import CliRunner, Result

from server.app import create_app
from server.cli import app
from server.config import Settings
from tests.server.conftest import Api
from tests.server.fakes import FakeGrader

ROSTER = (
    "name,display_name\n"
    "Zoe.Smith@Uni.edu,Zoe Smith\n"  # an email login, upper case from the SIS: lower-cased
    "s2041187,Sam Student\n"  # an SIS id
    "ann.lee@uni.edu,Ann Lee\n"
    "zoe+rl@uni.edu,Zoe Again\n"  # line 5: a +tag
    "bad name,Bad Name\n"  # line 6: a space
)


def run(*args: str, code: int = 0) -> Result:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result


def rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


def test_email_logins_a_failed_import_and_both_lms_files(env: Settings, tmp_path: Path) -> None:
    run("users", "add", "prof", "--role", "instructor")
    run("courses", "create", "rlhf-a", "--instructor", "prof")
    for slug in ("actor-loss", "gae"):
        run("sets", "publish", "rlhf-a", slug)
    roster = tmp_path / "roster.csv"
    roster.write_text(ROSTER)
    imported = run("courses", "enroll", "rlhf-a", str(roster), code=1)  # a skipped row fails the command
    tokens = {r["name"]: r["token"] for r in rows(imported.stdout)}
    assert set(tokens) == {"zoe.smith@uni.edu", "s2041187", "ann.lee@uni.edu"}
    said = " ".join(imported.stderr.split())
    assert "line 5: skipped 'zoe+rl@uni.edu': The login has a '+'" in said
    assert "line 6: skipped 'bad name':" in said and "Not imported: lines 5, 6" in said

    with TestClient(create_app(env, FakeGrader().factory)) as client:  # zoe and sam hand in actor-loss
        api = Api(client, client.app.state.grader)  # type: ignore[attr-defined]
        for login in ("zoe.smith@uni.edu", "s2041187"):
            headers = {"Authorization": f"Bearer {tokens[login]}"}
            sent = client.post("/api/v1/submissions", headers=headers,
                               json={"exercise": "actor-loss", "source": "x = 1\n", "course": "rlhf-a"})
            assert sent.status_code == 202, sent.text
            api.wait_done(headers, sent.json()["id"])
    run("scores", "excuse", "rlhf-a", "s2041187", "gae", "--reason", "medical note", "--by", "prof")

    # Canvas: its export's layout, the Points Possible row, the login as SIS Login ID, EX, empty.
    header, points, *learners = list(csv.reader(io.StringIO(
        run("courses", "gradebook", "rlhf-a", "--format", "canvas").stdout, newline="")))
    assert header == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section",
                      "PPO clipped actor loss", "Generalized Advantage Estimation"]
    assert "Points Possible" in points[0] and points[5:] == ["100", "100"]
    canvas = {row[3]: row for row in learners}
    assert list(canvas) == ["ann.lee@uni.edu", "s2041187", "zoe.smith@uni.edu"]
    assert canvas["zoe.smith@uni.edu"][0] == "Zoe Smith" and canvas["zoe.smith@uni.edu"][5:] == ["75", ""]
    assert canvas["s2041187"][5:] == ["75", "EX"]  # excused: Canvas's own mark
    assert canvas["ann.lee@uni.edu"][5:] == ["", ""]  # never attempted: empty, not 0
    by_sis_id = list(csv.reader(io.StringIO(run(
        "courses", "gradebook", "rlhf-a", "--format", "canvas", "--login-column", "sis-user-id").stdout, newline="")))
    assert [(r[2], r[3]) for r in by_sis_id[2:]] == [(login, "") for login in canvas]

    # Moodle: a login per row to map to username, email address or ID number; "-" for no grade.
    moodle = list(csv.reader(io.StringIO(run("courses", "gradebook", "rlhf-a", "--format", "moodle").stdout,
                                         newline="")))
    assert moodle[0] == ["Username", "Full name", "PPO clipped actor loss", "Generalized Advantage Estimation"]
    assert moodle[1:] == [["ann.lee@uni.edu", "Ann Lee", "-", "-"], ["s2041187", "Sam Student", "75", "-"],
                          ["zoe.smith@uni.edu", "Zoe Smith", "75", "-"]]

    # The long file says the same, with its reasons: no score, attempts 0; excused.
    long = {(r["learner"], r["exercise"]): r for r in rows(run("courses", "gradebook", "rlhf-a").stdout)}
    never = long[("ann.lee@uni.edu", "actor-loss")]
    assert (never["counted_score"], never["attempts"], never["raw_best_score"]) == ("", "0", "")
    excused = long[("s2041187", "gae")]
    assert (excused["counted_score"], excused["correction"]) == ("", "excused")
    run("courses", "gradebook", "rlhf-a", "--format", "xlsx", code=2)
