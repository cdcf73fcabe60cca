"""Roster import into courses: a course argument or a course column; existing users enrolled."""

from __future__ import annotations

from server.models import Role
from tests.server.courses.conftest import Term


def test_users_import_with_a_course_argument_or_column(term: Term) -> None:
    term.course("sec-a")
    term.course("sec-b")
    term.user("old")  # exists already: enrolled, not refused
    csv = (
        "name,display_name,course\n"
        "ann,Ann A.,\n"                  # the argument's course
        "bob,Bob B.,sec-b\n"             # its own
        "old,,sec-b\n"
        "eve,Eve,no-such-course\n"
        f"zed,Zed,{'x' * 5000}\n"        # hostile: reported, capped, nothing created
    )
    answer = term.client.post("/api/v1/users/import?course=sec-a", content=csv.encode(),
                              headers={**term.instructor, "Content-Type": "text/csv"})
    assert answer.status_code == 200, answer.text
    report = answer.json()
    rows = {r["name"]: r for r in report["rows"]}
    assert (report["created"], report["enrolled"], report["skipped"]) == (2, 1, 2)
    assert (rows["ann"]["course"], rows["bob"]["course"], rows["old"]["course"]) == ("sec-a", "sec-b", "sec-b")
    assert rows["old"]["token"] is None and rows["ann"]["token"]
    assert "no-such-course" in rows["eve"]["error"] and len(rows["zed"]["error"]) < 100
    users = {u["name"] for u in term.client.get("/api/v1/users", headers=term.instructor).json()}
    assert "eve" not in users and "zed" not in users
    courses = term.client.get("/api/v1/courses", headers={"Authorization": f"Bearer {rows['ann']['token']}"}).json()
    assert [c["slug"] for c in courses] == ["sec-a"]


def test_an_instructor_enrolls_only_into_courses_they_teach(term: Term) -> None:
    other = term.user("other-prof", Role.INSTRUCTOR)
    term.course("theirs", headers=other)
    answer = term.client.post("/api/v1/courses/theirs/roster", content=b"name\nann\n",
                              headers={**term.instructor, "Content-Type": "text/csv"})
    assert (answer.status_code, answer.json()["error"]) == (404, "CourseNotFound")
    users = {u["name"] for u in term.client.get("/api/v1/users", headers=term.instructor).json()}
    assert "ann" not in users
