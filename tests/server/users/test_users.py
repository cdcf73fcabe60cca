"""Roles, token revoke/rotate, roster import (API and CLI)."""

from __future__ import annotations

from typer.testing import CliRunner

from server.cli import app
from server.config import Settings
from server.models import Role
from tests.server.conftest import Api

ROSTER = "name,display_name,role\nalice,Alice A.,learner\nbob,Bob B.\nalice,Alice again\ncarol,Carol,teacher\n"


def test_learner_cannot_use_instructor_routes(api: Api) -> None:
    learner = api.user("lea")
    for method, path in (
        ("GET", "/api/v1/users"),
        ("POST", "/api/v1/users/import"),
        ("GET", "/api/v1/exercises/actor-loss/stats"),
        ("GET", "/api/v1/gradebook.csv"),
    ):
        response = api.client.request(method, path, headers=learner)
        assert response.status_code == 403, path
        assert response.json()["error"] == "NotAllowed"


def test_instructor_creates_learners_but_not_instructors_admin_may(api: Api) -> None:
    teacher = api.user("teacher", Role.INSTRUCTOR)
    created = api.client.post("/api/v1/users", json={"name": "lea", "display_name": "Lea"}, headers=teacher)
    assert created.status_code == 201
    token = created.json()["token"]
    assert api.client.get("/api/v1/me", headers={"Authorization": f"Bearer {token}"}).json()["role"] == "learner"
    refused = api.client.post("/api/v1/users", json={"name": "t2", "role": "instructor"}, headers=teacher)
    assert refused.status_code == 403
    admin = api.user("root", Role.ADMIN)
    assert api.client.post("/api/v1/users", json={"name": "t2", "role": "instructor"}, headers=admin).status_code == 201


def test_display_names_set_through_the_api_or_a_roster_lose_their_control_characters(api: Api) -> None:
    """An escape sequence or a bidirectional override in a display name would reach an
    administrator's terminal and the pages; they come out where the name enters, as for an LMS's."""
    teacher = api.user("teacher", Role.INSTRUCTOR)
    forged = "Lea\x1b]0;owned\x07\u202eevil\tB."
    created = api.client.post("/api/v1/users", json={"name": "lea", "display_name": forged}, headers=teacher)
    assert created.status_code == 201
    assert created.json()["user"]["display_name"] == "Lea]0;ownedevil B."
    roster = "name,display_name\nbo,\"Bo\x1b[2J\u2066 Z\"\n"
    imported = api.client.post("/api/v1/users/import", content=roster, headers=teacher)
    assert imported.status_code == 200, imported.text
    people = {u["name"]: u["display_name"] for u in api.client.get("/api/v1/users", headers=teacher).json()}
    assert people["bo"] == "Bo[2J Z"
    only_controls = api.client.post("/api/v1/users", json={"name": "cy", "display_name": "\x1b\x07"}, headers=teacher)
    assert only_controls.json()["user"]["display_name"] == "cy"


def test_rotate_revokes_old_token_and_issues_a_new_one(api: Api) -> None:
    old = api.user("lea")
    response = api.client.post("/api/v1/users/lea/tokens/rotate", headers=old)
    assert response.status_code == 200
    new = {"Authorization": f"Bearer {response.json()['token']}"}
    assert api.client.get("/api/v1/me", headers=old).status_code == 401
    assert api.client.get("/api/v1/me", headers=new).json()["name"] == "lea"


def test_instructor_revokes_a_learner_but_a_learner_cannot_revoke_others(api: Api) -> None:
    lea = api.user("lea")
    max_ = api.user("max")
    teacher = api.user("teacher", Role.INSTRUCTOR)
    # A learner acting on someone else: 404, as if the user did not exist.
    probe = api.client.post("/api/v1/users/max/tokens/revoke", headers=lea)
    assert probe.status_code == 404 and probe.json()["error"] == "UserNotFound"
    # An instructor may not act on another instructor.
    assert api.client.post("/api/v1/users/teacher/tokens/revoke", headers=api.user("t2", Role.INSTRUCTOR)).status_code == 404
    response = api.client.post("/api/v1/users/max/tokens/revoke", headers=teacher)
    assert response.json() == {"user": "max", "revoked": 1}
    assert api.client.get("/api/v1/me", headers=max_).status_code == 401
    assert api.client.get("/api/v1/me", headers=lea).status_code == 200


def test_roster_import_api_reports_duplicates_and_returns_tokens_once(api: Api) -> None:
    teacher = api.user("teacher", Role.INSTRUCTOR)
    api.user("bob")  # exists already
    response = api.client.post(
        "/api/v1/users/import", content=ROSTER.encode(), headers={**teacher, "Content-Type": "text/csv"}
    )
    assert response.status_code == 200, response.text
    report = response.json()
    assert (report["created"], report["skipped"]) == (1, 3)
    by_line = {row["line"]: row for row in report["rows"]}
    assert by_line[2]["created"] and by_line[2]["token"].startswith("ppg_")
    assert "exists already" in by_line[3]["error"] and by_line[3]["token"] is None
    assert "duplicate" in by_line[4]["error"]
    assert "unknown role" in by_line[5]["error"]
    alice = {"Authorization": f"Bearer {by_line[2]['token']}"}
    me = api.client.get("/api/v1/me", headers=alice).json()
    assert (me["name"], me["display_name"], me["role"]) == ("alice", "Alice A.", "learner")


def test_roster_import_refuses_instructor_rows_from_an_instructor(api: Api) -> None:
    teacher = api.user("teacher", Role.INSTRUCTOR)
    roster = "name,display_name,role\nt2,T Two,instructor\nlea,Lea,learner\n"
    report = api.client.post("/api/v1/users/import", content=roster, headers=teacher).json()
    assert report["created"] == 1
    assert "may not create instructor" in report["rows"][0]["error"]


def test_roster_without_name_column_is_422(api: Api) -> None:
    teacher = api.user("teacher", Role.INSTRUCTOR)
    response = api.client.post("/api/v1/users/import", content="login,display\nx,y\n", headers=teacher)
    assert response.status_code == 422 and response.json()["error"] == "InvalidRoster"


def test_cli_import_revoke_rotate(env: Settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    roster = tmp_path / "roster.csv"
    roster.write_text(ROSTER)
    runner = CliRunner()
    result = runner.invoke(app, ["users", "import", str(roster)])
    assert result.exit_code == 1, result.output  # two rows skipped: the command failed, the rest is in
    lines = result.stdout.strip().splitlines()
    assert lines[0] == "name,display_name,role,token"
    assert [line.split(",")[0] for line in lines[1:]] == ["alice", "bob"]
    assert "duplicate" in result.stderr and "unknown role" in result.stderr

    again = runner.invoke(app, ["users", "import", str(roster)])
    assert again.exit_code == 1 and again.stdout.strip().splitlines() == ["name,display_name,role,token"]

    rotated = runner.invoke(app, ["users", "rotate", "alice"])
    assert rotated.exit_code == 0 and rotated.stdout.strip().startswith("ppg_")
    revoked = runner.invoke(app, ["users", "revoke", "alice"])
    assert revoked.exit_code == 0 and "Revoked 1 token" in revoked.stderr
    missing = runner.invoke(app, ["users", "revoke", "nobody"])
    assert missing.exit_code == 2
