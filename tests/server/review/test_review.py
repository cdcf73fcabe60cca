"""Human review (``server.review``) over real HTTP (uvicorn, ``tests.server.live_server``; SQLite
and PostgreSQL): a TA comments on a line and answers a learner's review request with an override
(through the corrections service), the learner reads both on the API, the page and in
``ppo-submit show``; every staff action is in the audit log; a learner reaches no staff route or
page; hostile input gets a sentence; the forms keep the Origin and form-token checks; under
``hidden-until-due`` the staff's words wait for the score's release."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from html import unescape
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from ppo_submit.cli import Runtime, route
from ppo_submit.cli import app as submit_app
from server.app import create_app
from server.config import Settings
from server.courses.service import INSTRUCTOR
from server.models import AuditEvent, ReviewComment, ReviewRequest, Role
from server.review.service import MAX_REQUESTS_PER_SUBMISSION
from tests.server.conftest import enroll_named, logged_in, served_api, user_tokens, wait_graded
from tests.server.courses.conftest import DAY, DUE, HOUR, RELEASE, FakeClock
from tests.server.fakes import FakeGrader
from tests.server.live_server import live_server

COURSE = "winter"
SOURCE = "import math\n\ndef compute_actor_loss(a, b, c):\n    return math.nan  # why?\n"


@dataclass
class Site:
    """A served app: its URL, session factory, secret, clock, the users' tokens, submissions by name."""

    url: str
    factory: Any
    secret: bytes
    clock: FakeClock
    tokens: dict[str, str]
    subs: dict[str, int]

    def api(self, method: str, path: str, who: str = "prof", **kwargs: Any) -> httpx.Response:
        return served_api(self.url, self.tokens[who], method, path, **kwargs)

    def browser(self, who: str) -> tuple[httpx.Client, str]:
        """A logged-in client (its cookie jar) and its session's form token."""
        return logged_in(self.url, self.tokens[who], self.secret)

    def submit(self, who: str, exercise: str, source: str = SOURCE) -> int:
        sent = self.api("POST", "/submissions", who, json={"exercise": exercise, "source": source, "course": COURSE})
        assert sent.status_code == 202, sent.text
        wait_graded(self.url, self.tokens[who], sent.json()["id"])
        return int(sent.json()["id"])

    def counted(self, learner: str, exercise: str = "actor-loss") -> Any:
        scores = self.api("GET", f"/courses/{COURSE}/scores", params={"learner": learner}).json()["scores"]
        return next(s["counted_score"] for s in scores if s["exercise"] == exercise)

    def events(self) -> list[tuple[str, str, str]]:
        with self.factory() as session:
            return [(e.actor, e.action, e.target) for e in session.scalars(select(AuditEvent).order_by(AuditEvent.id))]

    def rows(self) -> tuple[int, int]:
        with self.factory() as session:
            return (len(session.scalars(select(ReviewComment)).all()), len(session.scalars(select(ReviewRequest)).all()))


@pytest.fixture
def site(settings: Settings, grader: FakeGrader) -> Iterator[Site]:
    """winter: actor-loss (full feedback, due Friday) and gae (hidden-until-due, the same due
    date). ann and bob are its learners, tara its TA (a learner account), prof its instructor;
    eve is a learner of another course, where she submitted too. ann and bob submitted
    actor-loss, ann gae too, all before the due date."""
    clock = FakeClock()
    settings = settings.model_copy(update={"RATE_LIMIT": "1000/minute"})
    app = create_app(settings, grader.factory, clock=clock)
    with live_server(app) as url:
        factory = app.state.grader.session_factory
        tokens = user_tokens(factory, settings.secret_bytes, (("prof", Role.INSTRUCTOR), ("tara", Role.LEARNER),
                                                              ("ann", Role.LEARNER), ("bob", Role.LEARNER),
                                                              ("eve", Role.LEARNER)))
        s = Site(url, factory, settings.secret_bytes, clock, tokens, {})
        for slug in (COURSE, "other"):
            assert s.api("POST", "/courses", json={"slug": slug, "title": slug, "time_zone": "UTC"}).status_code == 201
        enroll_named(factory, [*((COURSE, name, role) for name, role in (
            ("ann", "learner"), ("bob", "learner"), ("tara", INSTRUCTOR), ("prof", INSTRUCTOR))),
            ("other", "eve", "learner"), ("other", "prof", INSTRUCTOR)])
        rules = {"release_at": RELEASE.isoformat(), "due_at": DUE.isoformat()}
        for slug, policy in (("actor-loss", "full"), ("gae", "hidden-until-due")):
            put = s.api("PUT", f"/courses/{COURSE}/exercises/{slug}", json={**rules, "feedback_policy": policy})
            assert put.status_code == 200, put.text
        assert s.api("PUT", "/courses/other/exercises/actor-loss", json={}).status_code == 200
        clock.now = DUE - DAY
        s.subs = {"ann": s.submit("ann", "actor-loss"), "bob": s.submit("bob", "actor-loss"),
                  "ann-gae": s.submit("ann", "gae")}
        sent = s.api("POST", "/submissions", "eve", json={"exercise": "actor-loss", "source": SOURCE, "course": "other"})
        assert sent.status_code == 202
        s.subs["eve"] = int(sent.json()["id"])
        yield s


def _show(site: Site, who: str, submission: int, *extra: str, command: str = "show") -> Any:
    """``ppo-submit show`` (or ``command``) as the learner runs it, over the network to the live server."""
    env = {"PPO_GRADER_URL": site.url, "PPO_GRADER_TOKEN": site.tokens[who]}
    return CliRunner().invoke(submit_app, route([command, str(submission), *extra]), env=env,
                              obj=Runtime(sleep=lambda seconds: None), prog_name="ppo-submit")


def test_a_ta_comments_on_a_line_and_answers_a_request_with_an_override(site: Site) -> None:
    ann = site.subs["ann"]
    commented = site.api("POST", f"/submissions/{ann}/comments", "tara", json={"line": 4, "body": "NaN is\nnever a loss."})
    assert commented.status_code == 201, commented.text
    assert (commented.json()["line"], commented.json()["source_line"]) == (4, "    return math.nan  # why?")

    asked = _show(site, "ann", ann, "Check 3 is too strict?", command="review")  # `ppo-submit review ID MESSAGE`
    assert asked.exit_code == 0, asked.output
    twice = _show(site, "ann", ann, "again?", command="review")
    assert twice.exit_code == 2 and "open review request already" in " ".join(twice.stderr.split())
    queue = site.api("GET", f"/courses/{COURSE}/review-requests", "tara").json()
    assert [(r["learner"], r["submission"], r["state"], r["message"]) for r in queue["requests"]] == [
        ("ann", ann, "open", "Check 3 is too strict?")]
    rid = queue["requests"][0]["id"]
    assert f"Review request {rid} sent for submission {ann}" in " ".join(asked.stdout.split())
    assert site.counted("ann") == 75  # the fake grader's score

    answered = site.api("POST", f"/courses/{COURSE}/review-requests/{rid}/answer", "tara",
                        json={"answer": "Fair point: 90 by hand.", "score": 90})
    assert answered.status_code == 200, answered.text
    assert (answered.json()["state"], answered.json()["override_score"]) == ("resolved", 90)
    assert site.counted("ann") == 90  # the corrections service's override
    scores = site.api("GET", f"/courses/{COURSE}/scores", "ann").json()["scores"]
    assert any(s["exercise"] == "actor-loss" and s["counted_score"] == 90 for s in scores)
    assert site.api("GET", f"/courses/{COURSE}/review-requests", "tara").json()["requests"] == []
    again = site.api("POST", f"/courses/{COURSE}/review-requests/{rid}/answer", "tara",
                     json={"answer": "twice"})
    assert again.status_code == 409 and again.json()["error"] == "ReviewAlreadyOpen"

    assert site.events()[-3:] == [
        ("tara", "review.comment", f"ann/actor-loss#{ann}"),
        ("tara", "score.override", "ann/actor-loss"),
        ("tara", "review.answer", f"ann/actor-loss#{ann}"),
    ]
    review = site.api("GET", f"/submissions/{ann}/review", "ann").json()
    assert [c["body"] for c in review["comments"]] == ["NaN is\nnever a loss."]
    assert [(r["answer"], r["answered_by"], r["override_score"]) for r in review["requests"]] == [
        ("Fair point: 90 by hand.", "tara", 90)]

    client, _csrf = site.browser("ann")
    page = unescape(client.get(f"/dashboard/submissions/{ann}").text)
    assert "NaN is\nnever a loss." in page and "return math.nan  # why?" in page
    assert "Fair point: 90 by hand." in page and "the score that counts is now 90" in page
    assert 'id="comment-form"' not in page and 'id="override-form"' not in page  # no staff form for her

    shown = _show(site, "ann", ann)
    assert shown.exit_code == 1, shown.output  # a check failed: the same code as `ppo-submit FILE`
    text = " ".join(shown.stdout.split())
    assert "Comment on line 4 by tara" in text and "4 | return math.nan # why?" in text and "NaN is never a loss." in text
    assert "Answer by tara" in text and "The score that counts is now 90." in text and "Fair point: 90 by hand." in text
    as_json = _show(site, "ann", ann, "--json")
    assert '"override_score": 90' in as_json.stdout.replace("90.0", "90")


def test_resolving_without_a_correction_changes_no_score(site: Site) -> None:
    bob = site.subs["bob"]
    asked = site.api("POST", f"/submissions/{bob}/review-requests", "bob", json={"message": "why?"}).json()
    done = site.api("POST", f"/courses/{COURSE}/review-requests/{asked['id']}/answer", "prof",
                    json={"answer": "The grade stands."})
    assert done.status_code == 200 and done.json()["override_score"] is None
    assert site.counted("bob") == 75 and site.events()[-1][1] == "review.answer"
    resolved = site.api("GET", f"/courses/{COURSE}/review-requests", "prof", params={"state": "resolved"}).json()
    assert [r["answer"] for r in resolved["requests"]] == ["The grade stands."]


def test_one_open_request_per_submission_and_a_cap_on_them(site: Site) -> None:
    ann = site.subs["ann"]
    first = site.api("POST", f"/submissions/{ann}/review-requests", "ann", json={"message": "please"})
    assert first.status_code == 201
    second = site.api("POST", f"/submissions/{ann}/review-requests", "ann", json={"message": "please!!"})
    assert second.status_code == 409 and "open review request already" in second.json()["detail"]
    for number in range(MAX_REQUESTS_PER_SUBMISSION - 1):
        open_id = site.api("GET", f"/courses/{COURSE}/review-requests", "tara").json()["requests"][0]["id"]
        assert site.api("POST", f"/courses/{COURSE}/review-requests/{open_id}/answer", "tara",
                        json={"answer": f"no {number}"}).status_code == 200
        assert site.api("POST", f"/submissions/{ann}/review-requests", "ann", json={"message": "again"}).status_code == 201
    open_id = site.api("GET", f"/courses/{COURSE}/review-requests", "tara").json()["requests"][0]["id"]
    site.api("POST", f"/courses/{COURSE}/review-requests/{open_id}/answer", "tara", json={"answer": "final"})
    capped = site.api("POST", f"/submissions/{ann}/review-requests", "ann", json={"message": "one more"})
    assert capped.status_code == 409 and f"{MAX_REQUESTS_PER_SUBMISSION} review requests" in capped.json()["detail"]
    assert site.rows()[1] == MAX_REQUESTS_PER_SUBMISSION


def test_hostile_input_gets_a_sentence(site: Site) -> None:
    ann, bob = site.subs["ann"], site.subs["bob"]
    before = site.rows()
    cases = [
        ("tara", f"/submissions/{ann}/comments", {"line": 1, "body": "x" * 100_000}, 422, "ValidationError"),
        ("tara", f"/submissions/{ann}/comments", {"line": 5, "body": "past the end"}, 422, "InvalidReview"),
        ("tara", f"/submissions/{ann}/comments", {"line": 0, "body": "line zero"}, 422, "ValidationError"),
        ("tara", f"/submissions/{ann}/comments", {"line": 10**12, "body": "huge line"}, 422, "ValidationError"),
        ("tara", f"/submissions/{ann}/comments", {"line": 1, "body": " \n\t\x1b "}, 422, "InvalidReview"),
        ("tara", f"/submissions/{ann}/comments", {"line": 1, "body": "nul\x00"}, 422, "InvalidReview"),
        ("tara", f"/submissions/{ann}/comments", {"line": "one", "body": "x"}, 422, "ValidationError"),
        ("tara", f"/submissions/{site.subs['eve']}/comments", {"line": 1, "body": "not my course"}, 404,
         "SubmissionNotFound"),
        ("tara", "/submissions/999999/comments", {"line": 1, "body": "nobody's"}, 404, "SubmissionNotFound"),
        ("ann", f"/submissions/{bob}/review-requests", {"message": "bob's, not mine"}, 404, "SubmissionNotFound"),
        ("ann", f"/submissions/{ann}/review-requests", {"message": "m" * 5000}, 422, "ValidationError"),
        ("ann", f"/submissions/{ann}/review-requests", {"message": "\u202e\u202e"}, 422, "InvalidReview"),
        ("tara", f"/courses/{COURSE}/review-requests/999999/answer", {"answer": "x"}, 404, "ReviewNotFound"),
    ]
    for who, path, body, status, error in cases:
        answer = site.api("POST", path, who, json=body)
        assert (answer.status_code, answer.json()["error"]) == (status, error), (path, body, answer.text[:300])
        assert len(answer.json()["detail"]) < 1000
    assert site.rows() == before
    kept = site.api("POST", f"/submissions/{ann}/comments", "tara", json={"line": 1, "body": "ok\x1b[31m red\u202e"})
    assert kept.json()["body"] == "ok[31m red"  # control characters taken out, the rest kept
    # a request answered by another course's staff: prof teaches "other" too, but the request is winter's
    asked = site.api("POST", f"/submissions/{ann}/review-requests", "ann", json={"message": "hm"}).json()
    elsewhere = site.api("POST", f"/courses/other/review-requests/{asked['id']}/answer", "prof", json={"answer": "x"})
    assert elsewhere.status_code == 404
    overlong = site.api("POST", f"/courses/{COURSE}/review-requests/{asked['id']}/answer", "tara",
                        json={"answer": "a" * 600, "score": 50})
    assert overlong.status_code == 422 and "reason" in overlong.json()["detail"]
    bad_score = site.api("POST", f"/courses/{COURSE}/review-requests/{asked['id']}/answer", "tara",
                         json={"answer": "no", "score": 150})
    assert bad_score.status_code == 422 and "0 to 100" in bad_score.json()["detail"]
    assert site.api("GET", f"/submissions/{ann}/review", "ann").json()["requests"][0]["state"] == "open"


def test_a_learner_reaches_no_staff_route_or_page(site: Site) -> None:
    ann, bob, eve = site.subs["ann"], site.subs["bob"], site.subs["eve"]
    asked = site.api("POST", f"/submissions/{bob}/review-requests", "bob", json={"message": "look"}).json()
    before = (site.rows(), len(site.events()))
    api = [
        ("POST", f"/submissions/{ann}/comments", {"line": 1, "body": "self-praise"}, 403),  # her own: staff's action
        ("POST", f"/submissions/{bob}/comments", {"line": 1, "body": "x"}, 404),
        ("GET", f"/submissions/{bob}/review", None, 404),
        ("GET", f"/courses/{COURSE}/review-requests", None, 403),
        ("GET", "/courses/other/review-requests", None, 404),
        ("POST", f"/courses/{COURSE}/review-requests/{asked['id']}/answer", {"answer": "ok", "score": 100}, 403),
        ("POST", f"/courses/other/review-requests/{asked['id']}/answer", {"answer": "ok"}, 404),
    ]
    for method, path, body, status in api:
        assert site.api(method, path, "ann", json=body).status_code == status, (method, path)
    # eve (another course's learner) and tara (winter's TA) outside their reach
    assert site.api("GET", f"/submissions/{ann}/review", "eve").status_code == 404
    assert site.api("GET", f"/courses/{COURSE}/review-requests", "eve").status_code == 404
    assert site.api("GET", "/courses/other/review-requests", "tara").status_code == 404
    assert site.api("GET", f"/submissions/{eve}/review", "tara").status_code == 404

    client, csrf = site.browser("ann")
    assert client.get("/dashboard/reviews", params={"course": COURSE}).status_code == 404
    assert client.get("/dashboard/reviews").status_code == 404
    forms = [
        ("/dashboard/reviews/comment", {"course": COURSE, "submission": str(ann), "line": "1", "body": "x"}),
        ("/dashboard/reviews/override", {"course": COURSE, "submission": str(ann), "score": "100", "reason": "me"}),
        ("/dashboard/reviews/answer", {"course": COURSE, "request": str(asked["id"]), "answer": "x", "score": "100"}),
        ("/dashboard/reviews/request", {"submission": str(bob), "message": "bob's"}),
    ]
    for path, fields in forms:
        answer = client.post(path, data={"csrf": csrf, **fields})
        assert answer.status_code == 404, (path, answer.status_code)
    page = client.get(f"/dashboard/submissions/{ann}").text
    assert 'id="request-form"' in page and 'id="comment-form"' not in page and ">Reviews<" not in page
    assert (site.rows(), len(site.events())) == before
    assert site.counted("ann") == 75


def test_the_forms_keep_the_origin_and_form_token_checks(site: Site) -> None:
    ann = site.subs["ann"]
    tara, csrf = site.browser("tara")
    fields = {"course": COURSE, "submission": str(ann), "line": "2", "body": "a blank line"}
    assert tara.post("/dashboard/reviews/comment", data=fields).status_code == 403  # no form token
    assert tara.post("/dashboard/reviews/comment", data={**fields, "csrf": "forged"}).status_code == 403
    other = tara.post("/dashboard/reviews/comment", data={**fields, "csrf": csrf},
                      headers={"Origin": "https://evil.example"})
    assert other.status_code == 403 and "not sent from this site" in other.text
    huge = tara.post("/dashboard/reviews/comment", data={**fields, "csrf": csrf, "body": "é" * 20_000})
    assert huge.status_code == 413 and "at most 2000 characters" in unescape(huge.text)
    out_of_range = tara.post("/dashboard/reviews/comment", data={**fields, "csrf": csrf, "line": "99"})
    assert out_of_range.status_code == 422 and "lines 1 to 4" in out_of_range.text
    assert site.rows() == (0, 0)

    done = tara.post("/dashboard/reviews/comment", data={**fields, "csrf": csrf})
    assert done.status_code == 303 and done.headers["location"] == f"/dashboard/submissions/{ann}#review"
    ann_browser, ann_csrf = site.browser("ann")
    assert ann_browser.post("/dashboard/reviews/request", data={"submission": str(ann), "message": "x"}).status_code == 403
    asked = ann_browser.post("/dashboard/reviews/request", data={"csrf": ann_csrf, "submission": str(ann),
                                                                 "message": "Is line 2 really wrong?"})
    assert asked.status_code == 303
    page = unescape(tara.get(f"/dashboard/submissions/{ann}").text)
    assert "Is line 2 really wrong?" in page and 'class="answer-form"' in page and 'id="override-form"' in page
    queue = tara.get("/dashboard/reviews", params={"course": COURSE}).text
    assert 'aria-current="page">Reviews</a>' in queue and f'href="/dashboard/submissions/{ann}"' in queue
    assert "1 open." in queue
    klass = tara.get("/dashboard", params={"course": COURSE}).text  # the course page links the queue
    assert 'id="open-reviews"' in klass and "1 review request open" in klass
    request_id = site.api("GET", f"/courses/{COURSE}/review-requests", "tara").json()["requests"][0]["id"]
    answer = {"course": COURSE, "request": str(request_id), "answer": "Yes: 80.", "score": "80", "reason": "line 2"}
    assert tara.post("/dashboard/reviews/answer", data=answer).status_code == 403
    assert tara.post("/dashboard/reviews/answer", data={**answer, "csrf": csrf}).status_code == 303
    assert site.counted("ann") == 80
    over = {"course": COURSE, "submission": str(ann), "score": "85", "reason": "second look"}
    assert tara.post("/dashboard/reviews/override", data=over).status_code == 403
    assert tara.post("/dashboard/reviews/override", data={**over, "csrf": csrf}).status_code == 303
    assert site.counted("ann") == 85
    assert [a for _who, a, _t in site.events()[-4:]] == ["review.comment", "score.override", "review.answer",
                                                          "score.override"]
    klass = tara.get("/dashboard", params={"course": COURSE}).text  # the course page's audit log
    assert 'id="open-reviews"' not in klass  # none open now
    assert re.findall(r'<tr data-action="([^"]+)">', klass)[:3] == ["score.override", "review.answer", "score.override"]


def test_hidden_until_due_holds_the_staff_words_until_the_release(site: Site) -> None:
    gae = site.subs["ann-gae"]
    assert site.api("POST", f"/submissions/{gae}/comments", "tara", json={"line": 1, "body": "see me"}).status_code == 201
    held = site.api("GET", f"/submissions/{gae}/review", "ann").json()
    assert held["held"] is True and held["comments"] == []
    refused = site.api("POST", f"/submissions/{gae}/review-requests", "ann", json={"message": "?"})
    assert refused.status_code == 422 and "not released yet" in refused.json()["detail"]
    client, _csrf = site.browser("ann")
    page = client.get(f"/dashboard/submissions/{gae}").text
    assert "see me" not in page and 'id="review-held"' in page and 'id="request-form"' not in page
    assert "see me" not in _show(site, "ann", gae).stdout
    assert site.api("GET", f"/submissions/{gae}/review", "tara").json()["comments"][0]["body"] == "see me"

    site.clock.now = DUE + HOUR  # released at the due date
    shown = site.api("GET", f"/submissions/{gae}/review", "ann").json()
    assert shown["held"] is False and [c["body"] for c in shown["comments"]] == ["see me"]
    assert "see me" in client.get(f"/dashboard/submissions/{gae}").text
    assert site.api("POST", f"/submissions/{gae}/review-requests", "ann", json={"message": "?"}).status_code == 201


def test_requests_sent_at_once_open_one(site: Site) -> None:
    """Eight requests of one submission at once (real HTTP, threads): one opens, every other is
    told one is open already (the learner's lock, and the partial unique index beneath it)."""
    from concurrent.futures import ThreadPoolExecutor

    ann = site.subs["ann"]
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda n: site.api("POST", f"/submissions/{ann}/review-requests", "ann",
                                                   json={"message": f"request {n}"}), range(8)))
    assert sorted(a.status_code for a in answers) == [201] + [409] * 7
    assert {a.json()["error"] for a in answers if a.status_code == 409} == {"ReviewAlreadyOpen"}
    assert site.rows()[1] == 1


def test_a_read_only_or_another_courses_token_is_refused(site: Site) -> None:
    ann = site.subs["ann"]
    read = site.api("POST", "/me/tokens", "tara", json={"scope": "read"}).json()["token"]
    other = site.api("POST", "/me/tokens", "prof", json={"course": "other"}).json()["token"]
    winter = site.api("POST", "/me/tokens", "tara", json={"course": COURSE}).json()["token"]
    site.tokens.update({"tara-read": read, "prof-other": other, "tara-winter": winter})
    comment = {"line": 1, "body": "scoped"}
    refused = site.api("POST", f"/submissions/{ann}/comments", "tara-read", json=comment)
    assert refused.status_code == 403 and refused.json()["error"] == "OutsideTokenScope"
    assert site.api("GET", f"/submissions/{ann}/review", "tara-read").status_code == 200  # reading is allowed
    for path in (f"/submissions/{ann}/review", f"/courses/{COURSE}/review-requests"):
        answer = site.api("GET", path, "prof-other")
        assert answer.status_code == 403 and answer.json()["error"] == "OutsideTokenScope", path
    assert site.api("POST", f"/submissions/{ann}/comments", "prof-other", json=comment).status_code == 403
    assert site.api("POST", f"/submissions/{ann}/comments", "tara-winter", json=comment).status_code == 201
    assert site.rows() == (1, 0)
