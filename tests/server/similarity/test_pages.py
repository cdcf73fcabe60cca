"""The similarity pages through the real app (TestClient with the web session): the list,
the side-by-side view with the matching lines marked, the review buttons, who may see them,
and the cross-site refusal of their forms."""

from __future__ import annotations

import re
from html import unescape

from tests.server.courses.conftest import Term
from tests.server.similarity.test_api import small_course, wait_run


def login(term: Term, headers: dict[str, str]) -> None:
    token = headers["Authorization"].split()[1]
    assert term.client.post("/login", data={"token": token}, follow_redirects=False).status_code == 303


def test_instructors_list_pairs_compare_view_and_mark(term: Term) -> None:
    small_course(term)
    login(term, term.instructor)
    page = term.client.get("/dashboard/similarity?course=rlhf-a")
    assert page.status_code == 200 and "Not compared yet" in page.text
    compare = term.client.post("/dashboard/similarity/run", data={"course": "rlhf-a"}, follow_redirects=False)
    assert compare.status_code == 303 and compare.headers["location"] == "/dashboard/similarity?course=rlhf-a"
    wait_run(term)
    page = term.client.get("/dashboard/similarity?course=rlhf-a").text
    rows = re.findall(r"<tr><td class=\"num\">(\d+)</td><td><a href=\"([^\"]+)\">", page)
    assert [unescape(href) for _, href in rows[:2]] == [
        "/dashboard/similarity/l03/l28?course=rlhf-a", "/dashboard/similarity/l07/l29?course=rlhf-a"]
    assert "learners never see it" in page
    # The run's time in the course's zone, saying which (the course is in Europe/Paris).
    assert re.search(r"Run \d+ \(on request, \d{4}-\d\d-\d\d \d\d:\d\d:\d\d CES?T\)", page), page

    pair = term.client.get("/dashboard/similarity/l07/l29?course=rlhf-a").text
    assert 'href="/dashboard/learners/l07"' in pair and 'href="/dashboard/learners/l29"' in pair
    marked = re.findall(r'<span class="match"><i>(\d+)</i>', pair)
    assert len(marked) >= 8  # most of both files is the same code
    assert "SUPPORTED" in pair and "ALLOWED_KINDS" in pair
    assert "not reviewed" in pair

    done = term.client.post("/dashboard/similarity/l07/l29/review", data={"course": "rlhf-a", "mark": "concern"},
                            follow_redirects=False)
    assert done.status_code == 303
    assert "reviewed: concern" in term.client.get(done.headers["location"]).text
    assert "reviewed: concern" in term.client.get("/dashboard/similarity?course=rlhf-a").text
    api = term.client.get("/api/v1/courses/rlhf-a/similarity", headers=term.instructor).json()
    assert {(p["learner_a"], p["learner_b"]): p["review"] for p in api["pairs"]}[("l07", "l29")] == "concern"

    forged = term.client.post("/dashboard/similarity/l07/l29/review", data={"course": "rlhf-a", "mark": "fine"},
                              headers={"Origin": "https://evil.example"}, follow_redirects=False)
    assert forged.status_code == 403
    assert term.client.post("/dashboard/similarity/run", data={"course": "rlhf-a"},
                            headers={"Origin": "https://evil.example"}).status_code == 403
    bad = term.client.post("/dashboard/similarity/l07/l29/review", data={"course": "rlhf-a", "mark": "guilty"})
    assert bad.status_code == 400
    assert term.client.get("/dashboard/similarity?course=rlhf-a&exercise=gae").status_code == 400
    assert term.client.get("/dashboard/similarity/l07/nobody?course=rlhf-a").status_code == 404
    assert term.client.get("/dashboard/similarity?course=not-mine").status_code == 404


def test_learners_get_the_not_found_page(term: Term) -> None:
    small_course(term)
    term.client.post("/api/v1/courses/rlhf-a/similarity", headers=term.instructor)
    wait_run(term)
    login(term, term.tokens["l28"])
    for path in ("/dashboard/similarity?course=rlhf-a", "/dashboard/similarity/l03/l28?course=rlhf-a"):
        answer = term.client.get(path)
        assert answer.status_code == 404 and "l03" not in answer.text, path
    assert term.client.post("/dashboard/similarity/l03/l28/review", data={"course": "rlhf-a", "mark": "fine"}).status_code == 404
    assert term.client.post("/dashboard/similarity/run", data={"course": "rlhf-a"}).status_code == 404
    own = term.client.get("/dashboard/learners/l28").text
    assert "imilar" not in own
