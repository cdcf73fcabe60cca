"""Issue 36's acceptance, walked as a TA in Debian's headless Chromium (Playwright) against the
app served by a real uvicorn (``tests.server.live_server``, the fake grader as the neighbouring
browser tests use it): publish an exercise, move its due date (the dry run's count is the number
of submissions whose counted score then changes), bulk-extend three learners from a pasted CSV,
hold and release the scores, apply a regrade, comment on a line, answer a learner's review
request with an override. After each step a second browser context, logged in as the learner,
reads what it changed. Screenshots go to the test's tmp folder."""

from __future__ import annotations

import os
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
from sqlalchemy import select

from server.app import create_app
from server.config import Settings
from server.courses.service import INSTRUCTOR, enroll
from server.db import transaction
from server.models import AuditEvent, Course, Role, Submission, User
from server.users.service import create_user
from tests.server.dashboard.test_staff_regrades import FIXED
from tests.server.dashboard.test_web import CHROMIUM, CHROMIUM_ARGS
from tests.server.fakes import FakeGrader, FakeReport
from tests.server.live_server import live_server

COURSE = "accept-36"
ZONE = "Europe/Paris"
LEARNERS = ("ann", "bob", "cid", "dan", "eve")  # dan's file scores 0: re-pricing leaves his counted score as it is
SOURCE = "import torch\nloss = torch.tensor(0.0)\n"


def _local(moment: datetime) -> str:
    """``moment`` as the course's ``datetime-local`` inputs take it."""
    return f"{moment.astimezone(ZoneInfo(ZONE)):%Y-%m-%dT%H:%M:%S}"


def _shown(moment: datetime) -> str:
    """``moment`` as the pages print it (to the minute, in the course's zone)."""
    return _local(moment).replace("T", " ")[:16]


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_a_ta_walks_issue_36_in_chromium_and_the_learner_sees_each_result(
    settings: Settings, grader: FakeGrader, tmp_path: Path
) -> None:
    assert os.access(CHROMIUM, os.X_OK) and shutil.which("chromium"), "Debian's chromium is needed (apt-get install chromium)"
    from playwright import sync_api

    app = create_app(settings.model_copy(update={"RATE_LIMIT": "1000/minute"}), grader.factory)
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    due, moved, extended = now - timedelta(hours=2), now + timedelta(days=2), now + timedelta(days=5)
    with live_server(app) as url:
        factory = app.state.grader.session_factory
        with transaction(factory) as session:
            tokens = {name: create_user(session, name, Role.INSTRUCTOR if name == "prof" else Role.LEARNER,
                                        settings.secret_bytes).token for name in ("prof", "tara", *LEARNERS)}

        def api(method: str, path: str, who: str = "prof", **kwargs: Any) -> httpx.Response:
            return httpx.request(method, f"{url}/api/v1{path}", headers={"Authorization": f"Bearer {tokens[who]}"},
                                 timeout=30, **kwargs)

        def counted() -> dict[int, float | None]:
            with factory() as session:
                return {s.id: s.counted_score for s in session.scalars(select(Submission).order_by(Submission.id))}

        assert api("POST", "/courses", json={"slug": COURSE, "title": "Acceptance", "time_zone": ZONE}).status_code == 201
        with transaction(factory) as session:
            course = session.scalar(select(Course).where(Course.slug == COURSE))
            assert course is not None
            for user in session.scalars(select(User).where(User.name.in_(("tara", *LEARNERS)))):
                enroll(session, course, user, INSTRUCTOR if user.name == "tara" else "learner")

        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                def login(who: str, path: str) -> Any:
                    page = browser.new_context().new_page()
                    page.set_default_timeout(30_000)
                    page.goto(f"{url}{path}")
                    page.fill("#token", tokens[who])
                    page.click("button[type=submit]")
                    return page

                def shot(page: Any, name: str) -> None:
                    page.screenshot(path=str(tmp_path / f"{name}.png"), full_page=True)

                ta = login("tara", f"/dashboard?course={COURSE}")
                ann = login("ann", f"/dashboard?course={COURSE}")
                ann.wait_for_selector("h1")
                assert ann.query_selector("tr[data-exercise=actor-loss] td.due") is None  # not published yet

                # 1. Publish actor-loss: opened yesterday, due two hours ago, 10% a started day late.
                ta.click("nav a:has-text('Assignments')")
                ta.wait_for_selector("#set-actor-loss[data-published=no]")
                ta.fill("#f-actor-loss-release", _local(now - timedelta(days=1)))
                ta.fill("#f-actor-loss-due", _local(due))
                ta.fill("#f-actor-loss-penalty", "10")
                ta.click("#set-actor-loss form.publish button[type=submit]")
                ta.wait_for_selector("#set-actor-loss[data-published=yes]")
                ann.reload()
                assert ann.inner_text("tr[data-exercise=actor-loss] td.due time").startswith(_shown(due))

                # The learners hand in, late (dan's file scores 0).
                ids: dict[str, int] = {}
                for name in LEARNERS:
                    grader.report = FakeReport(score=0.0) if name == "dan" else FakeReport()
                    sent = api("POST", "/submissions", name, json={"exercise": "actor-loss", "source": SOURCE,
                                                                   "course": COURSE})
                    assert sent.status_code == 202, sent.text
                    ids[name] = sent.json()["id"]
                    deadline = time.monotonic() + 60
                    while api("GET", f"/submissions/{ids[name]}", name).json()["status"] != "done":
                        assert time.monotonic() < deadline
                        time.sleep(0.05)
                before = counted()
                assert before == {**{ids[n]: 67.5 for n in LEARNERS}, ids["dan"]: 0.0}
                ann.reload()
                assert ann.inner_text("table tr[data-exercise=actor-loss] td.counted") == "67.5"

                def move_due(to: datetime, name: str) -> tuple[int, int, int]:
                    """Move the due date on the page: the dry run's counts (counted scores, prices)
                    and how many counted scores the confirmed change then changed."""
                    before = counted()
                    ta.goto(f"{url}/dashboard/assignments?course={COURSE}")
                    ta.fill("#f-actor-loss-due", _local(to))
                    ta.click("#set-actor-loss form.publish button[type=submit]")
                    count = ta.wait_for_selector("#reprice-count")
                    dry = int(count.get_attribute("data-counted")), int(count.get_attribute("data-rewritten"))
                    assert counted() == before  # a dry run writes nothing
                    shot(ta, name)
                    ta.click("button:has-text('Confirm and apply')")
                    notice = ta.wait_for_selector("p.notice[role=status]").inner_text()
                    after = counted()
                    changed = sum(after[k] != before[k] for k in before)
                    assert before.keys() == after.keys() and f"{changed} counted scores changed" in notice, notice
                    return (*dry, changed)

                # 2. Move the due date two days on: the dry run counts the counted scores it changes.
                assert move_due(moved, "2-confirm") == (4, 5, 4)  # dan's 0 is on time now, and still 0
                ann.reload()
                assert ann.inner_text("tr[data-exercise=actor-loss] td.due time").startswith(_shown(moved))
                assert ann.inner_text("table tr[data-exercise=actor-loss] td.counted") == "75"

                # 3. Bulk-extend ann, bob and cid from a pasted CSV: the dry run, then the apply.
                ta.click("nav a:has-text('Extensions')")
                rows = "".join(f"{n},actor-loss,{_shown(extended)},conference week\n" for n in LEARNERS[:3])
                ta.fill("#b-csv", "learner,exercise,due,reason\n" + rows)
                ta.click("#bulk-form button[type=submit]")
                summary = ta.wait_for_selector("#plan-summary")
                assert (summary.get_attribute("data-rows"), summary.get_attribute("data-refused")) == ("3", "0")
                ta.click("#apply-form button[type=submit]")
                assert "Applied 3 rows" in ta.wait_for_selector("#bulk-done").inner_text()
                assert ta.inner_text("#ledger").count("conference week") == 3
                shot(ta, "3-extensions")
                for name in LEARNERS[:3]:
                    learner = ann if name == "ann" else login(name, f"/dashboard?course={COURSE}")
                    learner.reload()
                    assert learner.inner_text("tr[data-exercise=actor-loss] td.due time").startswith(_shown(extended)), name
                    if learner is not ann:
                        learner.context.close()
                eve = login("eve", f"/dashboard?course={COURSE}")
                assert eve.inner_text("tr[data-exercise=actor-loss] td.due time").startswith(_shown(moved))

                # 2b. Move the due date back to two hours ago: the three extended learners keep
                # their price, dan and eve are late again, and only eve's counted score moves.
                assert move_due(due, "2b-confirm") == (1, 2, 1)
                eve.reload()
                assert eve.inner_text("table tr[data-exercise=actor-loss] td.counted") == "67.5"
                eve.context.close()
                ann.reload()
                assert ann.inner_text("tr[data-exercise=actor-loss] td.due time").startswith(_shown(extended))
                assert ann.inner_text("table tr[data-exercise=actor-loss] td.counted") == "75"

                # 4. Hold the scores until the due date, then release them now.
                ta.goto(f"{url}/dashboard/assignments?course={COURSE}")
                ta.fill("#f-actor-loss-feedback", "hidden-until-due")
                ta.click("#set-actor-loss form.publish button[type=submit]")  # no re-pricing: no confirmation
                ta.wait_for_selector("#set-actor-loss form.release")
                ann.reload()
                assert ann.inner_text("table tr[data-exercise=actor-loss] td.counted") == "hidden until due"
                ta.click("#set-actor-loss form.release button[type=submit]")
                ta.wait_for_selector("#set-actor-loss form.hold")
                assert ta.inner_text("#set-actor-loss dd.policy") == "full"
                shot(ta, "4-released")
                ann.reload()
                assert ann.inner_text("table tr[data-exercise=actor-loss] td.counted") == "75"
                ann.goto(f"{url}/dashboard/submissions/{ids['ann']}")
                assert "clip boundary wrong" in ann.inner_text("body")  # the whole report, not only the score

                # 5. The grader is fixed: preview a regrade of every counted verdict, apply it with a reason.
                grader.report = FIXED
                ta.click("nav a:has-text('Regrades')")
                ta.select_option("#rp-exercise", "actor-loss")
                ta.check("#rp-all")
                ta.click("#regrade-preview button[type=submit]")
                deadline = time.monotonic() + 60
                while "ready:" not in ta.inner_text("#regrade-state"):
                    assert time.monotonic() < deadline, ta.inner_text("#regrade-state")
                    ta.reload()
                assert "5 up, 0 down" in ta.inner_text("#regrade-counts")
                ta.fill("#regrade-reason", "The clip check was too strict.")
                ta.click("#regrade-apply button[type=submit]")
                ta.wait_for_selector("p.notice[role=status]")
                assert "applied" in ta.inner_text("#regrade-state")
                ann.reload()
                regraded = ann.inner_text("#regrades")
                assert "The clip check was too strict." in regraded and "(counts 100)" in regraded

                # 6. Comment on line 2 of ann's file (the TA opens it from her learner page).
                ta.goto(f"{url}/dashboard/learners/ann?course={COURSE}")
                ta.click(f"a:text-is('#{ids['ann']}')")
                ta.wait_for_url(f"**/dashboard/submissions/{ids['ann']}*")
                ta.fill("#c-line", "2")
                ta.fill("#c-body", "A constant loss has no gradient.")
                ta.click("#comment-form button[type=submit]")
                ta.wait_for_selector("#review-comments li.comment[data-line='2']")
                ann.reload()
                comment = ann.inner_text("#review-comments li.comment[data-line='2']")
                assert "A constant loss has no gradient." in comment and "loss = torch.tensor(0.0)" in comment

                # 7. Ann asks for a review; the TA finds it on the Reviews page and answers with an override.
                ann.fill("#r-message", "The regrade gave 100 but my file is a stub: please look.")
                ann.click("#request-form button[type=submit]")
                ann.wait_for_selector("#review-requests li.request[data-state=open]")
                ta.click("nav a:has-text('Reviews')")
                assert "my file is a stub" in ta.inner_text("#open-requests")
                ta.click("#open-requests a:has-text('Answer')")
                form = ta.wait_for_selector("form.answer-form")
                request_id = (form.get_attribute("id") or "").removeprefix("answer-")
                ta.fill(f"#a-text-{request_id}", "Right: a stub is worth 40 by hand.")
                ta.fill(f"#a-score-{request_id}", "40")
                ta.click(f"#answer-{request_id} button[type=submit]")
                ta.wait_for_selector("#review-requests li.request[data-state=resolved]")
                shot(ta, "7-answered")
                ann.reload()
                answer = ann.inner_text("#review-requests li.request[data-state=resolved]")
                assert "a stub is worth 40 by hand." in answer and "the score that counts is now 40" in answer
                ann.goto(f"{url}/dashboard?course={COURSE}")
                assert ann.inner_text("table tr[data-exercise=actor-loss] td.counted") == "40"
                shot(ann, "7-learner")
            finally:
                browser.close()
        with factory() as session:
            actions = [a for a in session.scalars(select(AuditEvent.action).where(AuditEvent.actor == "tara"))]
        assert actions.count("extension.grant") == 3
        for action in ("set.publish", "set.edit", "scores.release", "regrade.apply", "review.comment",
                       "review.answer", "score.override"):
            assert action in actions, (action, actions)
