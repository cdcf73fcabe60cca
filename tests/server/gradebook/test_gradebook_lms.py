"""The Canvas and Moodle gradebooks (a row per learner, a column per exercise), compared byte for
byte with fixtures reviewed by hand against each importer's rules (docs/instructors.md,
"Gradebooks and exports"): Canvas's ``Student, ID, SIS User ID, SIS Login ID, Section`` and its
``Points Possible`` row, ``EX`` for excused; Moodle's ``-`` for no grade and no row but learners."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from server.models import Role
from tests.server.conftest import Api
from tests.server.dashboard.test_web import learner, log_in
from tests.server.rows import Rows

FIXTURES = Path(__file__).parent / "fixtures"


def build_class(api: Api, rows: Rows) -> dict[str, str]:
    """Five learners whose names need quoting or guarding, one excused, and an instructor who is left out."""
    teacher = api.user("teacher", Role.INSTRUCTOR)
    learner(api, "ann", "Able, Ann")  # a comma: quoted
    learner(api, "bob", 'Bob "The Builder"')  # quotes: doubled
    learner(api, "cal", '=HYPERLINK("http://x")')  # a formula: never run by a spreadsheet
    learner(api, "dee", "Dörte Ünal")  # UTF-8
    learner(api, "zoe.smith@uni.edu", "Zoe Smith")  # an email login
    rows.add("ann", score=80, exercise="actor-loss", minute=1)
    rows.add("ann", score=100, exercise="actor-loss", minute=2)  # the best counts
    rows.add("ann", score=87.5, exercise="gae", minute=3)
    rows.add("bob", score=None, verdict="crashed", exercise="actor-loss", minute=4)  # attempted, nothing graded: 0
    rows.add("bob", score=100 / 3, exercise="whiten", minute=5)  # 33.33
    rows.add("dee", score=None, verdict="internal_error", exercise="actor-loss", minute=6)  # the grader's fault: not an attempt
    rows.add("zoe.smith@uni.edu", score=50, exercise="actor-loss", minute=7)
    rows.add("teacher", score=100, exercise="actor-loss", minute=8)
    excused = api.client.put("/api/v1/courses/default/scores/zoe.smith@uni.edu/actor-loss/excuse",
                             json={"reason": "medical note"}, headers=teacher)
    assert excused.status_code == 200, excused.text
    # cal never submitted: no score anywhere.
    return teacher


def table(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))


def test_the_canvas_and_moodle_files_match_their_fixtures_byte_for_byte(api: Api, rows: Rows) -> None:
    teacher = build_class(api, rows)
    for path, fixture, name in (
        ("/api/v1/gradebook/canvas.csv", "gradebook-canvas.csv", "gradebook-canvas.csv"),
        ("/api/v1/gradebook/wide.csv", "gradebook-canvas.csv", "gradebook-canvas.csv"),  # its first name
        ("/api/v1/gradebook/canvas.csv?login_column=sis-user-id", "gradebook-canvas-sis-user-id.csv", "gradebook-canvas.csv"),
        ("/api/v1/gradebook/moodle.csv", "gradebook-moodle.csv", "gradebook-moodle.csv"),
    ):
        response = api.client.get(path, headers=teacher)
        assert response.status_code == 200, (path, response.text)
        assert response.headers["content-type"] == "text/csv; charset=utf-8"
        assert response.headers["content-disposition"] == f'attachment; filename="{name}"'
        assert response.content == (FIXTURES / fixture).read_bytes(), (path, response.text)

    log_in(api, teacher)  # the same files from the dashboard's download links
    assert api.client.get("/dashboard/gradebook-canvas.csv").content == (FIXTURES / "gradebook-canvas.csv").read_bytes()
    assert api.client.get("/dashboard/gradebook-moodle.csv").content == (FIXTURES / "gradebook-moodle.csv").read_bytes()
    assert api.client.get("/api/v1/gradebook/canvas.csv?login_column=id", headers=teacher).status_code == 422


def test_the_canvas_file_reads_as_canvas_reads_it(api: Api, rows: Rows) -> None:
    teacher = build_class(api, rows)
    data = api.client.get("/api/v1/gradebook/canvas.csv", headers=teacher).content
    assert not data.startswith(b"\xef\xbb\xbf") and data.endswith(b"\r\n") and b"\r\n" in data  # RFC 4180, no BOM
    header, points, *learners = table(data)
    # Canvas's importer: "Student" then "ID", then SIS User ID and SIS Login ID, the last identity column "Section".
    assert header[:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    titles = [e["title"] for e in api.client.get("/api/v1/exercises", headers=teacher).json()]
    assert header[5:] == titles
    assert "Points Possible" in points[0] and points[1:5] == ["", "", "", ""] and set(points[5:]) == {"100"}
    by_login = {row[3]: dict(zip(header, row, strict=True)) for row in learners}
    assert list(by_login) == ["ann", "bob", "cal", "dee", "zoe.smith@uni.edu"]  # learners only, by login
    assert by_login["ann"]["PPO clipped actor loss"] == "100" and by_login["ann"]["Generalized Advantage Estimation"] == "87.5"
    assert by_login["bob"]["PPO clipped actor loss"] == "0" and by_login["bob"]["Masked whitening"] == "33.33"
    assert all(by_login["cal"][t] == "" for t in titles)  # never attempted: empty, not 0
    assert by_login["dee"]["PPO clipped actor loss"] == ""  # only an internal error: never attempted
    assert by_login["zoe.smith@uni.edu"]["PPO clipped actor loss"] == "EX"  # excused: Canvas's mark
    assert by_login["cal"]["Student"] == "'=HYPERLINK(\"http://x\")"  # the name Canvas falls back on, guarded
    assert all(row["ID"] == row["SIS User ID"] == row["Section"] == "" for row in by_login.values())
    assert api.client.get("/api/v1/gradebook/canvas.csv", headers=api.user("zed")).status_code == 403
    assert api.client.get("/api/v1/gradebook/canvas.csv").status_code == 401


def test_the_moodle_file_reads_as_moodle_reads_it(api: Api, rows: Rows) -> None:
    teacher = build_class(api, rows)
    header, *learners = table(api.client.get("/api/v1/gradebook/moodle.csv", headers=teacher).content)
    assert header[:2] == ["Username", "Full name"]
    # Moodle stops a whole import at a row whose user it cannot find, and a row with an empty
    # identity cell takes the previous row's user: every row is a learner with a login.
    assert [row[0] for row in learners] == ["ann", "bob", "cal", "dee", "zoe.smith@uni.edu"]
    by_login = {row[0]: dict(zip(header, row, strict=True)) for row in learners}
    assert by_login["ann"]["PPO clipped actor loss"] == "100" and by_login["bob"]["PPO clipped actor loss"] == "0"
    assert by_login["zoe.smith@uni.edu"]["PPO clipped actor loss"] == "-"  # excused: no grade
    assert set(list(by_login["cal"].values())[2:]) == {"-"}  # never attempted: no grade ("-" in every column kind)
