"""Two courses on one server: no board, statistic, gradebook or learner page leaks across them."""

from __future__ import annotations

import re

from sqlalchemy import select

from server.models import Course, Role
from server.security import pseudonym
from tests.server.courses.conftest import DUE, Term


def test_two_courses_see_nothing_of_each_other(term: Term) -> None:
    prof_a, prof_b = term.user("prof-a", Role.INSTRUCTOR), term.user("prof-b", Role.INSTRUCTOR)
    admin = term.user("root", Role.ADMIN)
    term.course("sec-a", headers=prof_a)
    term.course("sec-b", headers=prof_b)
    term.enroll("sec-a", "ann", headers=prof_a)
    term.enroll("sec-b", "bob", headers=prof_b)
    for slug, prof in (("sec-a", prof_a), ("sec-b", prof_b)):
        term.publish(slug, headers=prof, due_at=DUE).raise_for_status()
    ann_sub = term.submit_at(DUE, "ann")
    bob_sub = term.submit_at(DUE, "bob")
    assert (ann_sub["course"], bob_sub["course"]) == ("sec-a", "sec-b")
    get = term.client.get

    def board(course: str, who: dict[str, str], path: str = "/api/v1/leaderboard") -> list[str]:
        answer = get(f"{path}?course={course}&exercise=actor-loss", headers=who)
        assert answer.status_code == 200, answer.text
        return [e["learner"] for e in answer.json()["entries"]]

    # Boards: each course's own learners, for its instructor and its learners (who see
    # pseudonyms unless the course shows real names: sec-a does, sec-b keeps the default).
    assert term.client.patch("/api/v1/courses/sec-a/settings", json={"board_real_names": True},
                             headers=prof_a).status_code == 200
    assert board("sec-a", prof_a) == board("sec-a", term.tokens["ann"]) == ["Ann"]
    assert board("sec-b", prof_b) == ["Bob"]
    bob_id = term.client.get("/api/v1/me", headers=term.tokens["bob"]).json()["id"]
    with term.api.state.session_factory() as session:
        sec_b = session.scalar(select(Course.id).where(Course.slug == "sec-b"))
    assert board("sec-b", term.tokens["bob"]) == [pseudonym(bob_id, term.api.state.settings.secret_bytes, sec_b)]
    assert get("/api/v1/leaderboard?course=sec-a", headers=prof_a).json()["total"] == 1  # overall board too
    assert board("sec-a", admin) == ["Ann"] and board("sec-b", admin) == ["Bob"]
    # The default course holds neither (they are enrolled elsewhere).
    assert board("default", prof_a) == []
    # Someone else's course is 404, for its instructors and learners alike.
    for who, other in ((prof_a, "sec-b"), (term.tokens["ann"], "sec-b"), (prof_b, "sec-a"), (term.tokens["bob"], "sec-a")):
        for path in (f"/api/v1/leaderboard?course={other}", f"/api/v1/leaderboard/actor-loss/speed?course={other}",
                     f"/api/v1/courses/{other}/exercises"):
            answer = get(path, headers=who)
            assert (answer.status_code, answer.json()["error"]) == (404, "CourseNotFound"), path
    for path in ("/api/v1/exercises/actor-loss/stats?course=sec-b", "/api/v1/gradebook.csv?course=sec-b"):
        assert get(path, headers=prof_a).status_code == 404
        assert get(path, headers=prof_b).status_code == 200

    # Statistics count only the course's learners and submissions.
    stats = get("/api/v1/exercises/actor-loss/stats?course=sec-a", headers=prof_a).json()
    assert (stats["submissions"], stats["learners_attempted"]) == (1, 1)
    # Gradebooks list only the course's learners.
    book_a = get("/api/v1/gradebook.csv?course=sec-a", headers=prof_a).text
    book_b = get("/api/v1/gradebook.csv?course=sec-b", headers=prof_b).text
    assert "ann," in book_a and "bob" not in book_a
    assert "bob," in book_b and "ann" not in book_b
    # Learner pages: one course's instructor cannot read the other's learners.
    assert get("/api/v1/submissions?user=bob", headers=prof_a).json() == []
    assert get(f"/api/v1/submissions/{bob_sub['id']}", headers=prof_a).status_code == 404
    assert [s["id"] for s in get("/api/v1/submissions?user=ann", headers=prof_a).json()] == [ann_sub["id"]]
    assert get(f"/api/v1/submissions/{bob_sub['id']}", headers=admin).status_code == 200
    # Course lists: each their own; the admin every course.
    assert [c["slug"] for c in get("/api/v1/courses", headers=term.tokens["ann"]).json()] == ["sec-a"]
    assert [c["slug"] for c in get("/api/v1/courses", headers=prof_a).json()] == ["default", "sec-a"]
    assert [c["slug"] for c in get("/api/v1/courses", headers=admin).json()] == ["default", "sec-a", "sec-b"]
    # A learner cannot submit into a course they are not in.
    wrong = term.submit_at(DUE, "ann", course="sec-b")
    assert (wrong.status_code, wrong.json()["error"]) == (404, "CourseNotFound")


def test_the_dashboard_keeps_courses_apart(term: Term) -> None:
    prof_a = term.user("prof-a", Role.INSTRUCTOR)
    term.course("sec-a", headers=prof_a)
    term.enroll("sec-a", "ann", headers=prof_a)
    term.publish("sec-a", headers=prof_a, due_at=DUE).raise_for_status()
    ann_sub = term.submit_at(DUE, "ann")
    term.user("dee")  # a learner of the default course only
    dee_sub = term.submit_at(DUE, "dee")
    assert dee_sub["course"] == "default"

    def page(who: dict[str, str], path: str) -> int:
        token = who["Authorization"].split()[1]
        term.client.cookies.clear()
        login = term.client.post("/login", data={"token": token}, headers={"Origin": "http://testserver"},
                                 follow_redirects=False)
        assert login.status_code in (302, 303), login.text
        return term.client.get(path, follow_redirects=False).status_code

    # prof (the default course's instructor, not sec-a's) cannot open ann's pages...
    assert page(term.instructor, "/dashboard/learners/ann") == 404
    assert page(term.instructor, f"/dashboard/submissions/{ann_sub['id']}") == 404
    assert page(term.instructor, "/dashboard/learners/dee") == 200
    # ...while sec-a's instructor opens ann's (and, like every instructor, the default course's).
    assert page(prof_a, "/dashboard/learners/ann") == 200
    assert page(prof_a, f"/dashboard/submissions/{ann_sub['id']}") == 200
    # The class pages are the default course's: ann (sec-a) is not listed.
    term.client.cookies.clear()
    assert page(term.instructor, "/dashboard/learners") == 200
    listing = term.client.get("/dashboard/learners").text
    assert "dee" in listing and "ann" not in listing


def test_the_class_pages_show_the_course_an_instructor_picks(term: Term) -> None:
    prof_a, prof_b = term.user("prof-a", Role.INSTRUCTOR), term.user("prof-b", Role.INSTRUCTOR)
    term.course("sec-a", headers=prof_a)
    term.course("sec-b", headers=prof_b)
    term.enroll("sec-a", "ann", headers=prof_a)
    term.enroll("sec-b", "bob", headers=prof_b)
    for slug, prof in (("sec-a", prof_a), ("sec-b", prof_b)):
        term.publish(slug, headers=prof, due_at=DUE).raise_for_status()
    term.submit_at(DUE, "ann")
    term.submit_at(DUE, "bob")
    client = term.client
    client.cookies.clear()
    token = prof_a["Authorization"].split()[1]
    assert client.post("/login", data={"token": token}, headers={"Origin": "http://testserver"},
                       follow_redirects=False).status_code in (302, 303)
    # The default course first; sec-a offered as a switch, sec-b (not taught) never.
    home = client.get("/dashboard").text
    assert "Course: <b>" in home and "?course=sec-a" in home and "sec-b" not in home.lower()
    # Picking sec-a: its learner and its numbers, remembered for the next pages.
    picked = client.get("/dashboard?course=sec-a")
    assert picked.status_code == 200 and "Course: <b>SEC-A" in picked.text
    learners = client.get("/dashboard/learners").text
    assert "ann" in learners and "bob" not in learners
    exercise = client.get("/dashboard/exercises/actor-loss").text
    stats = client.get("/api/v1/exercises/actor-loss/stats?course=sec-a", headers=prof_a).json()
    assert f'data-value="{stats["submissions"]}"' in exercise or f">{stats['submissions']}<" in exercise
    wide = client.get("/dashboard/gradebook-canvas.csv")
    assert wide.headers["content-disposition"].endswith('gradebook-canvas-sec-a.csv"')
    assert "ann" in wide.text and "bob" not in wide.text
    # Someone else's course is a 404, whether asked for or left in a cookie.
    assert client.get("/dashboard?course=sec-b").status_code == 404
    client.cookies.set("ppo_course", "sec-b", path="/dashboard")
    assert "Course: <b>" in client.get("/dashboard").text  # falls back to the default course


def test_the_html_board_shows_the_course_asked_for(term: Term) -> None:
    """``/leaderboard?course=`` ranks that course's learners, as ``/api/v1/leaderboard?course=`` does;
    its tabs and pager stay in the course; a course the viewer does not teach is a 404."""
    prof_a, prof_b = term.user("prof-a", Role.INSTRUCTOR), term.user("prof-b", Role.INSTRUCTOR)
    term.course("sec-a", headers=prof_a)
    term.course("sec-b", headers=prof_b)
    term.enroll("sec-a", "ann", "cid", headers=prof_a)
    term.enroll("sec-b", "bob", headers=prof_b)
    for slug, prof in (("sec-a", prof_a), ("sec-b", prof_b)):
        term.publish(slug, headers=prof, due_at=DUE).raise_for_status()
    for name in ("ann", "cid", "bob"):
        term.submit_at(DUE, name)
    term.user("dee")  # the default course's learner
    term.submit_at(DUE, "dee")
    client = term.client

    def log_in(who: dict[str, str]) -> None:
        client.cookies.clear()
        answer = client.post("/login", data={"token": who["Authorization"].split()[1]}, follow_redirects=False)
        assert answer.status_code == 303, answer.text

    def logins(path: str) -> list[str]:
        page = client.get(path)
        assert page.status_code == 200, page.text
        return re.findall(r'<td class="login">([^<]*)</td>', page.text)

    def api_logins(course: str, who: dict[str, str]) -> list[str]:
        body = client.get(f"/api/v1/leaderboard?course={course}&exercise=actor-loss", headers=who).json()
        return [e["name"] for e in body["entries"]]

    log_in(prof_a)
    tied = api_logins("sec-a", prof_a)  # a tie: in the pseudonyms' order
    assert logins("/leaderboard?course=sec-a&exercise=actor-loss") == tied and sorted(tied) == ["ann", "cid"]
    assert logins("/leaderboard?course=default&exercise=actor-loss") == api_logins("default", prof_a) == ["dee"]
    assert logins("/leaderboard?exercise=actor-loss") == tied  # no course: the newest one prof_a teaches
    page = client.get("/leaderboard?course=sec-a&limit=1").text
    assert "<h1>Leaderboard · Overall (SEC-A)</h1>" in page
    assert 'href="/leaderboard?course=sec-a&amp;exercise=actor-loss&amp;limit=1"' in page  # tabs keep the course
    assert 'href="/leaderboard?course=sec-a&amp;page=2&amp;limit=1">Next' in page  # so does the pager
    for other in ("sec-b", "nope"):  # not taught, or not there: the same 404
        answer = client.get(f"/leaderboard?course={other}")
        assert answer.status_code == 404 and "No course by that name that you teach." in answer.text
        assert 'id="board"' not in answer.text

    log_in(prof_b)
    assert logins("/leaderboard?course=sec-b&exercise=actor-loss") == api_logins("sec-b", prof_b) == ["bob"]
    assert client.get("/leaderboard?course=sec-a").status_code == 404

    log_in(term.user("root", Role.ADMIN))  # an admin reads every course's board
    assert logins("/leaderboard?course=sec-a") == tied and logins("/leaderboard?course=sec-b") == ["bob"]
    log_in(term.tokens["ann"])  # a learner: their own course's board, by pseudonym (no logins); no other course's
    own = client.get("/leaderboard?course=sec-a")
    assert own.status_code == 200 and logins("/leaderboard?course=sec-a") == [] and "Cid" not in own.text
    assert client.get("/leaderboard?course=sec-b").status_code == 404
