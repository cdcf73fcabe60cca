"""Issue 35's acceptance in Debian's Chromium: the tool as its own https service with the real
grader (`uvicorn server.app:create_app`, jail and all), the independent platform as another
process, and the browser doing what people do.

1. The instructor adds two exercises from the LMS's picker (deep linking): the platform makes
   one assignment and one line item for each.
2. A learner launches the first from the LMS, lands signed in on their page for it, submits
   by upload; `ppo-grader lti grades apply` sends the counted score once, with its time.
3. Another learner's late submission of the second arrives with its late penalty and time.
4. An override changes the platform's score after `grades apply`; a second apply sends nothing.
Screenshots are kept in the test's tmp folder."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, select

from exercises.registry import get_exercise
from server.models import Course, Submission, User, utcnow
from tests.lti.conftest import LEARNER, SECRET, STAFF
from tests.lti.servers import ROOT, Platform, free_port, make_certificate, platform_process
from tests.server.dashboard.test_web import CHROMIUM, CHROMIUM_ARGS

BIN = Path(sys.executable).parent
PEOPLE = {
    "prof": {"sub": "b-prof", "login": "prof", "name": "Margaret Hamilton", "roles": {"A1": [STAFF]}},
    "ada": {"sub": "b-ada", "login": "ada", "name": "Ada Lovelace", "roles": {"A1": [LEARNER]}},
    "bob": {"sub": "b-bob", "login": "bob", "name": "Bob Kahn", "roles": {"A1": [LEARNER]}},
}
SLUG = "rlhf-a1"


@dataclass
class Service:
    url: str
    database: str
    env: dict[str, str]
    platform: Platform

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([str(BIN / "ppo-grader"), *args], env=self.env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    tmp = tmp_path_factory.mktemp("lti-browser")
    cert, key = make_certificate(tmp)
    port = free_port()
    database = f"sqlite:///{tmp}/tool.db"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PPO_GRADER_")},
        "PPO_GRADER_DATABASE_URL": database,
        "PPO_GRADER_SECRET_KEY": SECRET,
        "PPO_GRADER_WORKERS": "1",
        "PPO_GRADER_LTI_POLL_SECONDS": "1",
        "XDG_CONFIG_HOME": str(tmp / "config"),
    }
    log = open(tmp / "tool.log", "w")
    tool = subprocess.Popen(
        [str(BIN / "python"), "-m", "uvicorn", "server.app:create_app", "--factory", "--host", "127.0.0.1",
         "--port", str(port), "--ssl-keyfile", str(key), "--ssl-certfile", str(cert), "--log-level", "warning"],
        env=env, cwd=ROOT, stdout=log, stderr=log,
    )
    url = f"https://localhost:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"{url}/api/v1/health", verify=str(cert), timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert tool.poll() is None and time.monotonic() < deadline, (tmp / "tool.log").read_text()[-3000:]
            time.sleep(0.3)
        with platform_process(url, cert, tmp / "platform.log") as platform:
            platform.people(PEOPLE, {"A1": {"title": "RLHF, hands on", "label": "RLHF-A1"}})
            service = Service(url, database, env, platform)
            reg = platform.registration()
            service.cli(
                "lti", "add-platform", "--name", reg["name"], "--issuer", reg["issuer"], "--client-id", reg["client_id"],
                "--auth-login-url", reg["auth_login_url"], "--auth-token-url", reg["auth_token_url"],
                "--jwks-url", reg["jwks_url"], "--deployment-id", reg["deployment_ids"][0],
            )
            yield service
    finally:
        tool.terminate()
        try:
            tool.wait(timeout=60)
        except subprocess.TimeoutExpired:
            tool.kill()
        log.close()


def _db(service: Service):  # type: ignore[no-untyped-def]
    from sqlalchemy.orm import Session

    return Session(create_engine(service.database))


def _scores(service: Service, sub: str) -> list[dict]:  # type: ignore[type-arg]
    return [s for s in service.platform.state()["scores"] if s["userId"] == sub]


def _submit_by_upload(page, service: Service, name: str, slug: str, shots: Path, late: bool = False) -> int:  # type: ignore[no-untyped-def]
    """From the LMS, the learner's launch of ``slug``; the page opened for it; a file uploaded
    (``late``: past its due date, so the page asks first and the learner sends it anyway)."""
    link = next(r["id"] for r in service.platform.state()["resource_links"] if r["custom"].get("exercise") == slug)
    page.goto(service.platform.launch_url(user=name, context="A1", link=link))
    page.wait_for_url(re.compile(rf".*/dashboard/learners/{name}\?course={SLUG}&exercise={slug}$"))
    assert page.locator("h1").inner_text() == "Your work"
    assert page.locator(f'tr[data-exercise="{slug}"][aria-current]').count() == 1
    assert page.locator("#upload-exercise").input_value() == slug
    assert page.locator("#terminal a").inner_text() == "Use from a terminal"
    page.screenshot(path=str(shots / f"{name}-landed.png"), full_page=True)
    source = get_exercise(slug).reference_source
    page.set_input_files("#upload-file", {"name": f"{slug}.py", "mimeType": "text/x-python", "buffer": source.encode()})
    page.click("#upload-form button[type=submit]")
    if late:
        page.wait_for_selector("#late-notice")
        assert f"{slug} was due on" in page.locator("#late-notice").inner_text()
        page.click("#late-confirm button[type=submit]")
    page.wait_for_url(re.compile(r".*/dashboard/submissions/\d+$"))
    submission_id = int(page.url.rsplit("/", 1)[1])
    from playwright.sync_api import expect

    # the page reloads by itself when the verdict arrives (live.js)
    expect(page.locator("#submission-counted")).not_to_have_text("–", timeout=600_000)
    page.screenshot(path=str(shots / f"{name}-graded.png"), full_page=True)
    return submission_id


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_launch_submit_and_grades_back_in_chromium(service: Service, tmp_path: Path) -> None:
    assert os.access(CHROMIUM, os.X_OK) and shutil.which("chromium"), "Debian's chromium is needed"
    from playwright import sync_api

    errors: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, "--ignore-certificate-errors"], headless=True
        )
        try:
            # 1. The instructor adds two exercises from the LMS's picker.
            prof = browser.new_context(viewport={"width": 1280, "height": 900}, ignore_https_errors=True).new_page()
            prof.set_default_timeout(60_000)
            # every page's failures, but the browser's own favicon.ico guess
            prof.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 and not r.url.endswith("/favicon.ico") else None)
            prof.goto(service.platform.launch_url(user="prof", context="A1", message="deeplink"))
            prof.wait_for_selector("#lti-picker")
            prof.check("#pick-actor-loss")
            prof.check("#pick-critic-loss")
            prof.screenshot(path=str(tmp_path / "picker.png"), full_page=True)
            prof.click("#pick-send")  # the answer page posts itself back to the LMS (launch.js)
            prof.wait_for_selector("#dl-done")
            assert prof.locator("#dl-done").inner_text() == "Added 2"
            items = service.platform.state()["line_items"]
            assert sorted(i["resourceId"] for i in items) == ["actor-loss", "critic-loss"]
            # The course's dashboard, from a resource-link launch of the same instructor.
            prof.goto(service.platform.launch_url(user="prof", context="A1"))
            prof.wait_for_url(re.compile(rf".*/dashboard\?course={SLUG}$"))
            assert "Margaret Hamilton" in prof.locator("header.site").inner_text()

            # critic-loss was due a day and a half ago, 10% off per started day.
            due, opened = utcnow() - timedelta(hours=36), utcnow() - timedelta(days=5)
            service.cli("sets", "publish", SLUG, "critic-loss", "--release", opened.isoformat(), "--due", due.isoformat(), "--penalty", "10")

            # 2. A learner launches, lands signed in on their page for the exercise, uploads.
            ada = browser.new_context(viewport={"width": 1280, "height": 900}, ignore_https_errors=True).new_page()
            ada.set_default_timeout(60_000)
            ada_submission = _submit_by_upload(ada, service, "ada", "actor-loss", tmp_path)
            assert ada.locator("#submission-counted").inner_text() == "100"
            applied = service.cli("lti", "grades", "apply", SLUG)
            assert "Sent 1 score(s)" in applied.stderr
            [sent] = _scores(service, "b-ada")
            with _db(service) as session:
                at = session.get(Submission, ada_submission).created_at  # type: ignore[union-attr]
            assert (sent["scoreGiven"], sent["scoreMaximum"]) == (100, 100)
            assert sent["submission"]["submittedAt"] == at.isoformat(timespec="microseconds")
            actor_item = next(i["key"] for i in items if i["resourceId"] == "actor-loss")
            assert sent["lineitem"] == actor_item

            # 3. A late submission arrives with its late penalty and its time.
            bob = browser.new_context(viewport={"width": 1280, "height": 900}, ignore_https_errors=True).new_page()
            bob.set_default_timeout(60_000)
            bob_submission = _submit_by_upload(bob, service, "bob", "critic-loss", tmp_path, late=True)
            assert bob.locator("#submission-counted").inner_text() == "80"  # 100, two started days late at 10%
            assert "Sent 1 score(s)" in service.cli("lti", "grades", "apply", SLUG).stderr
            [late] = _scores(service, "b-bob")
            with _db(service) as session:
                at = session.get(Submission, bob_submission).created_at  # type: ignore[union-attr]
            assert late["scoreGiven"] == 80 and "late 1d 12h: -20%" in late["comment"]
            assert late["submission"]["submittedAt"] == at.isoformat(timespec="microseconds")

            # 4. An override changes the platform's score after apply; a second apply sends nothing.
            service.cli("scores", "override", SLUG, "ada", "actor-loss", "55", "--reason", "copied the reference",
                        "--by", "prof")
            assert "Sent 1 score(s)" in service.cli("lti", "grades", "apply", SLUG).stderr
            assert [s["scoreGiven"] for s in _scores(service, "b-ada")] == [100, 55]
            before = service.platform.state()["scores"]
            assert "Sent 0 score(s); 2 up to date" in service.cli("lti", "grades", "apply", SLUG).stderr
            assert service.platform.state()["scores"] == before

            # The course's LTI page shows that nothing is left to send and, asked (a view never
            # calls the LMS), what the LMS has.
            prof.goto(f"{service.url}/dashboard/lti?course={SLUG}")
            prof.wait_for_selector("#lti-lms-unasked")
            prof.click("#lti-compare")  # queued for the background job: the page shows it, reloaded until done
            prof.wait_for_selector("#lti-task-compare")
            for _ in range(300):
                if prof.locator('#lti-task-compare[data-state="done"]').count():
                    break
                prof.wait_for_timeout(200)
                prof.reload()
            assert prof.locator('#lti-task-compare[data-state="done"]').count() == 1
            prof.wait_for_selector("#lti-grades")
            assert prof.locator("#lti-lms-unasked").count() == 0
            assert prof.locator("#lti-grades tbody tr").count() == 2
            assert prof.locator('#lti-grades tr[data-learner="ada"] td.lms').inner_text() == "55"
            assert prof.locator("#lti-grades td.action").all_inner_texts() == ["up to date", "up to date"]
            prof.screenshot(path=str(tmp_path / "lti-page.png"), full_page=True)
        finally:
            browser.close()
    assert not errors, errors
    with _db(service) as session:
        course = session.scalar(select(Course).where(Course.slug == SLUG))
        assert course is not None and session.scalar(select(User.role).where(User.name == "prof")) == "learner"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_launch_in_the_lms_frame_opens_the_tool_in_its_own_tab_signed_in(service: Service, tmp_path: Path) -> None:
    """Canvas shows a tool in a frame by default, where the login's state cookie would be a
    third-party cookie: the tool answers a framed login with a link that starts it in a tab of
    its own, which lands signed in."""
    from playwright import sync_api

    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, "--ignore-certificate-errors"], headless=True
        )
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900}, ignore_https_errors=True)
            page = context.new_page()
            page.set_default_timeout(60_000)
            page.goto(f"{service.platform.url}/course-page?user=prof&context=A1")
            # the login in a frame would need a third-party cookie (this Chromium blocks them):
            # the tool offers the same login in a tab of its own
            link = page.frame_locator("#tool").locator("#lti-open-tab")
            try:
                sync_api.expect(link).to_have_attribute("target", "_blank", timeout=60_000)
            finally:
                page.screenshot(path=str(tmp_path / "framed.png"), full_page=True)
            page.screenshot(path=str(tmp_path / "framed.png"), full_page=True)
            with context.expect_page() as opened:
                link.click()
            tab = opened.value
            try:
                tab.wait_for_url(re.compile(rf".*/dashboard\?course={SLUG}$"), timeout=60_000)
            finally:
                tab.screenshot(path=str(tmp_path / "tab.png"), full_page=True)
            assert "Margaret Hamilton" in tab.locator("header.site").inner_text()
        finally:
            browser.close()
