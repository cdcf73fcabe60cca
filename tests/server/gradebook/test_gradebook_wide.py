"""The wide gradebook (a row per learner, a column per exercise) that Canvas and Moodle
import as they are: compared byte for byte with a fixture reviewed by hand."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from server.models import Role
from tests.server.rows import Rows
from tests.server.dashboard.test_web import learner, log_in
from tests.server.conftest import Api

FIXTURE = Path(__file__).parent / "fixtures" / "gradebook-wide.csv"


def build_class(api: Api, rows: Rows) -> dict[str, str]:
    """Four learners whose names need quoting or guarding, and an instructor who is left out."""
    teacher = api.user("teacher", Role.INSTRUCTOR)
    learner(api, "ann", "Able, Ann")  # a comma: quoted
    learner(api, "bob", 'Bob "The Builder"')  # quotes: doubled
    learner(api, "cal", '=HYPERLINK("http://x")')  # a formula: never run by a spreadsheet
    learner(api, "dee", "Dörte Ünal")  # UTF-8
    rows.add("ann", score=80, exercise="actor-loss", minute=1)
    rows.add("ann", score=100, exercise="actor-loss", minute=2)  # the best counts
    rows.add("ann", score=87.5, exercise="gae", minute=3)
    rows.add("bob", score=None, verdict="crashed", exercise="actor-loss", minute=4)  # attempted, nothing graded: 0
    rows.add("bob", score=100 / 3, exercise="whiten", minute=5)  # 33.33
    rows.add("dee", score=None, verdict="internal_error", exercise="actor-loss", minute=6)  # the grader's fault: not an attempt
    rows.add("teacher", score=100, exercise="actor-loss", minute=7)
    # cal never submitted: every cell empty.
    return teacher


def test_the_wide_gradebook_matches_the_fixture_byte_for_byte(api: Api, rows: Rows) -> None:
    teacher = build_class(api, rows)
    response = api.client.get("/api/v1/gradebook/wide.csv", headers=teacher)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    assert response.headers["content-disposition"] == 'attachment; filename="gradebook-wide.csv"'
    assert response.content == FIXTURE.read_bytes()

    log_in(api, teacher)  # the same file from the dashboard's download link
    assert api.client.get("/dashboard/gradebook-wide.csv").content == FIXTURE.read_bytes()


def test_the_wide_gradebook_reads_as_the_lms_conventions_expect(api: Api, rows: Rows) -> None:
    teacher = build_class(api, rows)
    data = api.client.get("/api/v1/gradebook/wide.csv", headers=teacher).content
    assert not data.startswith(b"\xef\xbb\xbf") and data.endswith(b"\r\n") and b"\r\n" in data  # RFC 4180, no BOM
    table = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
    header = table[0]
    assert header[:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]  # Canvas's export layout
    titles = [e["title"] for e in api.client.get("/api/v1/exercises", headers=teacher).json()]
    assert header[5:] == titles
    by_login = {row[3]: dict(zip(header, row, strict=True)) for row in table[1:]}
    assert list(by_login) == ["ann", "bob", "cal", "dee"]  # learners only, by login; no "Points Possible" row
    assert by_login["ann"]["PPO clipped actor loss"] == "100" and by_login["ann"]["Generalized Advantage Estimation"] == "87.5"
    assert by_login["bob"]["PPO clipped actor loss"] == "0" and by_login["bob"]["Masked whitening"] == "33.33"
    assert all(by_login["cal"][t] == "" for t in titles)  # never attempted: empty, not 0
    assert by_login["dee"]["PPO clipped actor loss"] == ""  # only an internal error
    assert by_login["cal"]["Student"] == "'=HYPERLINK(\"http://x\")"
    assert api.client.get("/api/v1/gradebook/wide.csv", headers=api.user("zed")).status_code == 403
    assert api.client.get("/api/v1/gradebook/wide.csv").status_code == 401
