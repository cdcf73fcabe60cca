"""Grades back to the independent platform's gradebook (AGS): the score that counts (late
penalties, overrides, excuses) with its submission time, previewed then applied; nothing sent
twice; no duplicate columns; a failure loses nothing and shows on the course's LTI page; the
automatic mode's background job, retried with a doubling delay."""

from __future__ import annotations

import re
import time
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import select

from server.courses.corrections import excuse, override
from server.courses.counted import course_scores
from server.courses.sets import publish
from server.lti.grades import Action, apply, plan
from server.lti.services import LmsClient
from server.models import Course, LtiContext, LtiPlatform, Submission, User, utcnow
from server.users.service import issue_token
from tests.lti.conftest import LEARNER, SECRET, STAFF, Lti, pick_exercises
from tests.lti.servers import launch, lti_continue

PEOPLE = {
    "prof": {"sub": "g-prof", "login": "prof", "name": "Frances Allen", "roles": {"G1": [STAFF]}},
    "ada": {"sub": "g-ada", "login": "ada", "name": "Ada Lovelace", "roles": {"G1": [LEARNER]}},
    "bob": {"sub": "g-bob", "login": "bob", "name": "Bob Kahn", "roles": {"G1": [LEARNER]}},
    "cat": {"sub": "g-cat", "login": "cat", "name": "Cat Hopper", "roles": {"G1": [LEARNER]}},
}
SLUG = "grades-101"


@pytest.fixture(scope="module")
def course(lti: Lti) -> dict[str, str]:
    """G1 opened by its instructor, two exercises linked from the LMS, the learners launched in
    once; critic-loss due a day and a half ago, 10% off per started day; the learners' tokens."""
    lti.platform.people(PEOPLE, {"G1": {"title": "Grades", "label": "GRADES-101"}})
    with lti.client() as browser:
        lti_continue(browser, lti.tool, launch(browser, lti.platform, user="prof", context="G1"))
        pick_exercises(lti, browser, "prof", "G1", "actor-loss", "critic-loss")
    for name in ("ada", "bob", "cat"):
        with lti.client() as browser:
            lti_continue(browser, lti.tool, launch(browser, lti.platform, user=name, context="G1"))
    tokens = {}
    with lti.state.session_factory() as session:
        where = session.scalar(select(Course).where(Course.slug == SLUG))
        assert where is not None
        publish(session, where, "critic-loss", due_at=utcnow() - timedelta(hours=36), penalty_percent=10)
        for name in ("ada", "bob", "cat"):
            user = session.scalar(select(User).where(User.name == name))
            tokens[name] = issue_token(session, user, SECRET.encode())  # type: ignore[arg-type]
        session.commit()
    return tokens


def _submit(lti: Lti, token: str, exercise: str) -> int:
    response = httpx.post(
        f"{lti.tool}/api/v1/submissions",
        json={"exercise": exercise, "source": f"def f():\n    return {time.monotonic_ns()}\n", "course": SLUG},
        headers={"Authorization": f"Bearer {token}"},
        verify=str(lti.cert),
        timeout=30,
    )
    assert response.status_code in (201, 202), response.text
    submission_id = int(response.json()["id"])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with lti.state.session_factory() as session:
            row = session.get(Submission, submission_id)
            if row is not None and row.status == "done":
                return submission_id
        time.sleep(0.05)
    raise AssertionError("the submission was not graded")


def _link(session):  # type: ignore[no-untyped-def]
    where = session.scalar(select(Course).where(Course.slug == SLUG))
    return where, session.scalar(select(LtiContext).where(LtiContext.course_id == where.id))


def _apply(lti: Lti):  # type: ignore[no-untyped-def]
    with lti.state.session_factory() as session:
        _, link = _link(session)
    done = apply(lti.state.session_factory, link.id, SECRET.encode())
    assert done is not None
    return done


def _scores(lti: Lti, sub: str) -> list[dict]:  # type: ignore[type-arg]
    return [s for s in lti.platform.state()["scores"] if s["userId"] == sub]


def _line_item(lti: Lti, slug: str) -> str:
    [item] = [i for i in lti.platform.state()["line_items"] if i.get("resourceId") == slug]
    return str(item["key"])


def test_the_score_that_counts_goes_back_once_with_its_late_penalty_and_time(lti: Lti, course: dict[str, str]) -> None:
    ada = _submit(lti, course["ada"], "actor-loss")
    bob = _submit(lti, course["bob"], "critic-loss")  # late: 1.5 days after the due date
    with lti.state.session_factory() as session:
        where, link = _link(session)
        platform = session.get(LtiPlatform, link.platform_id)
        with LmsClient(lti.state.session_factory, SECRET.encode(), platform) as client:
            preview = plan(session, link, client=client)
        counted = course_scores(session, where)
        bob_id = session.scalar(select(User.id).where(User.name == "bob"))
        times = {i: session.get(Submission, i).created_at for i in (ada, bob)}  # type: ignore[union-attr]
    lines = {(line.login, line.exercise): line for line in preview.lines}
    assert set(lines) == {("ada", "actor-loss"), ("bob", "critic-loss")} and preview.lms_error is None
    assert all(line.action == Action.SEND and line.lms is None for line in lines.values())
    late = counted[(bob_id, "critic-loss")]
    assert late.counted == 60.0 and late.counting is not None and late.counting.late_seconds  # 75 less 2 started days at 10%

    done = _apply(lti)
    assert (done.sent, done.error) == (2, None)
    [to_ada] = _scores(lti, "g-ada")
    [to_bob] = _scores(lti, "g-bob")
    assert (to_ada["scoreGiven"], to_ada["scoreMaximum"], to_ada["lineitem"]) == (75.0, 100, _line_item(lti, "actor-loss"))
    assert (to_bob["scoreGiven"], to_bob["lineitem"]) == (60.0, _line_item(lti, "critic-loss"))
    assert (to_bob["activityProgress"], to_bob["gradingProgress"]) == ("Completed", "FullyGraded")
    assert to_bob["submission"]["submittedAt"] == times[bob].isoformat(timespec="microseconds")
    assert to_bob["https://canvas.instructure.com/lti/submission"]["submitted_at"] == to_bob["submission"]["submittedAt"]
    assert "late 1d 12h: -20%" in to_bob["comment"]
    # the deep-linked columns were found by resource id and tag, not made again
    assert len(lti.platform.state()["line_items"]) == 2


def test_a_second_apply_sends_nothing(lti: Lti, course: dict[str, str]) -> None:
    before = lti.platform.state()
    done = _apply(lti)
    after = lti.platform.state()
    assert (done.sent, done.up_to_date, done.requests) == (0, 2, 0)  # not even an access token
    assert (len(after["scores"]), after["token_requests"]) == (len(before["scores"]), before["token_requests"])
    with lti.state.session_factory() as session:
        _, link = _link(session)
        platform = session.get(LtiPlatform, link.platform_id)
        with LmsClient(lti.state.session_factory, SECRET.encode(), platform) as client:
            shown = plan(session, link, client=client)
    assert {(line.login, line.lms, line.action) for line in shown.lines} == {
        ("ada", 75.0, Action.UP_TO_DATE),
        ("bob", 60.0, Action.UP_TO_DATE),
    }


def test_an_override_and_an_excuse_change_the_platforms_score_after_apply(lti: Lti, course: dict[str, str]) -> None:
    with lti.state.session_factory() as session:
        where, _ = _link(session)
        override(session, where, "ada", "actor-loss", 90, "regraded by hand", "prof")
        excuse(session, where, "bob", "critic-loss", "illness", "prof")
        session.commit()
    done = _apply(lti)
    assert done.sent == 2
    assert [s["scoreGiven"] for s in _scores(lti, "g-ada")] == [75.0, 90.0]
    excused = _scores(lti, "g-bob")[-1]
    assert "scoreGiven" not in excused and excused["comment"] == "excused (by prof: illness)"
    assert _apply(lti).sent == 0


def test_an_unreachable_lms_loses_nothing_and_the_page_says_so(lti: Lti, course: dict[str, str]) -> None:
    _submit(lti, course["cat"], "actor-loss")
    lti.platform.post("/test/fail-ags/1000")
    try:
        failed = _apply(lti)
    finally:
        lti.platform.post("/test/fail-ags/0")
    assert failed.sent == 0 and failed.error is not None and "HTTP 503" in failed.error
    with lti.client() as browser:  # the instructor's LTI page shows it
        page = lti_continue(browser, lti.tool, launch(browser, lti.platform, user="prof", context="G1"))
        shown = browser.get(f"{lti.tool}/dashboard/lti", params={"course": SLUG})
    assert page.status_code == shown.status_code == 200
    assert 'id="lti-error"' in shown.text and "HTTP 503" in shown.text and "Nothing was lost" in shown.text
    assert re.search(r'data-learner="cat" data-exercise="actor-loss" class="send"', shown.text)
    done = _apply(lti)
    assert (done.sent, done.error) == (1, None)
    assert [s["scoreGiven"] for s in _scores(lti, "g-cat")] == [75.0]


def test_a_column_the_lms_lacks_is_created_once(lti: Lti, course: dict[str, str]) -> None:
    with lti.state.session_factory() as session:
        where, _ = _link(session)
        publish(session, where, "gae")  # published in ppo-grader, never linked in the LMS
        session.commit()
    _submit(lti, course["ada"], "gae")
    assert _apply(lti).sent == 1
    _submit(lti, course["bob"], "gae")
    assert _apply(lti).sent == 1
    gae = [i for i in lti.platform.state()["line_items"] if i.get("resourceId") == "gae"]
    assert len(gae) == 1 and gae[0]["tag"] == "ppo-grader"


def test_the_pages_send_button_has_the_background_job_send_once(lti: Lti, course: dict[str, str]) -> None:
    _submit(lti, course["bob"], "actor-loss")
    with lti.client() as browser:
        lti_continue(browser, lti.tool, launch(browser, lti.platform, user="prof", context="G1"))
        page = browser.get(f"{lti.tool}/dashboard/lti", params={"course": SLUG})
        assert re.search(r'data-learner="bob" data-exercise="actor-loss" class="send"', page.text)
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
        pressed = browser.post(f"{lti.tool}/dashboard/lti/grades", data={"csrf": csrf, "course": SLUG}, headers={"Origin": lti.tool})
        assert pressed.status_code == 200
    sent = _wait(lambda: [s for s in _scores(lti, "g-bob") if s["lineitem"] == _line_item(lti, "actor-loss")], "the job")
    _wait(lambda: _requested(lti) is None, "the request to be done")
    assert [s["scoreGiven"] for s in sent] == [75.0]


def _requested(lti: Lti):  # type: ignore[no-untyped-def]
    with lti.state.session_factory() as session:
        return _link(session)[1].send_requested_at


def _wait(predicate, what: str, seconds: float = 60):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"waited for {what}")


def test_the_automatic_mode_sends_each_change_in_the_background_and_retries_with_backoff(lti: Lti, course: dict[str, str]) -> None:
    with lti.state.session_factory() as session:
        _, link = _link(session)
        link.auto_grades = True
        session.commit()
    jobs = lti.state.lti.jobs_run  # type: ignore[union-attr]
    _submit(lti, course["cat"], "critic-loss")  # late too: 60
    sent = _wait(lambda: [s for s in _scores(lti, "g-cat") if s["lineitem"] == _line_item(lti, "critic-loss")], "the job")
    assert [s["scoreGiven"] for s in sent] == [60.0]
    assert lti.state.lti.jobs_run > jobs  # type: ignore[union-attr]

    lti.platform.post("/test/fail-ags/1000")
    try:
        with lti.state.session_factory() as session:
            where, _ = _link(session)
            override(session, where, "cat", "critic-loss", 70, "partial credit", "prof")
            session.commit()

        def failed(attempts: int):  # type: ignore[no-untyped-def]
            with lti.state.session_factory() as session:
                _, link = _link(session)
                return (link.sync_attempts, link.sync_failed_at, link.next_sync_at) if link.sync_attempts >= attempts else None

        attempts, at, retry = _wait(lambda: failed(1), "a failed job")
        assert attempts == 1 and retry - at == timedelta(seconds=30)  # then 60, 120 ... up to an hour
        with lti.state.session_factory() as session:  # the retry time comes
            _, link = _link(session)
            link.next_sync_at = utcnow() - timedelta(seconds=1)
            session.commit()
        attempts, at, retry = _wait(lambda: failed(2), "a second failed job")
        assert attempts == 2 and retry - at == timedelta(seconds=60)
    finally:
        lti.platform.post("/test/fail-ags/0")
    with lti.state.session_factory() as session:
        _, link = _link(session)
        link.next_sync_at = utcnow() - timedelta(seconds=1)
        session.commit()
    _wait(lambda: [s for s in _scores(lti, "g-cat") if s.get("scoreGiven") == 70], "the retried job")

    def recovered():  # type: ignore[no-untyped-def]
        # The job records its success after the LMS took the score (no transaction is held
        # across an LMS call), so the link's state follows the score by a moment.
        with lti.state.session_factory() as session:
            _, link = _link(session)
            return (link.sync_attempts, link.sync_error, link.next_sync_at) == (0, None, None)

    _wait(recovered, "the link's failure state cleared after the retried job")
    with lti.state.session_factory() as session:
        _, link = _link(session)
        link.auto_grades = False
        session.commit()
