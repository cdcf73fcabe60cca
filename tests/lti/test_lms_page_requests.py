"""The course LMS page's buttons that ask the LMS run in the background job, never in the web
request (``server.lti.tasks``), and the page shows how they went; a platform's token or key set
URL that fails is shown to the instructor (the page) and the administrator (``ppo-grader lti
platforms``) until it works again. Through the real tool and the independent platform
(``tests/lti/platform``), a slow LMS from the red team's harness."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from html import unescape

import httpx
import pytest
from sqlalchemy import func, select, update

from server.app import create_app
from server.config import Settings
from server.db import transaction
from server.lti import platforms
from server.lti.platforms import FAILURE_CHARS, Registration, add_platform, service_failed
from server.models import Course, LtiContext, LtiPlatform, LtiTask, utcnow
from tests.lti.conftest import LEARNER, SECRET, STAFF, Lti, finished_request
from tests.lti.servers import free_port, launch, lti_continue, make_certificate, platform_process, tls_server
from tests.lti.test_attacks_round5 import SlowRoster
from tests.lti.test_redteam import _hostile_course, served_and_registered
from tests.server.fakes import FakeGrader

SLUG = "wrong-101"
PEOPLE = {
    "prof": {"sub": "w-prof", "login": "prof", "name": "Margaret Hamilton", "roles": {"W1": [STAFF]}},
    "ada": {"sub": "w-ada", "login": "ada", "name": "Ada Lovelace", "roles": {"W1": [LEARNER]}},
}


@pytest.fixture(scope="module")
def wrong(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lti]:
    """A tool and the platform, registered as an administrator who mistyped the token URL."""
    tmp = tmp_path_factory.mktemp("lti-wrong")
    cert, key = make_certificate(tmp)
    port = free_port()
    settings = Settings(
        DATABASE_URL=f"sqlite:///{tmp}/tool.db", WORKERS=1, SECRET_KEY=SECRET, LTI_POLL_SECONDS=0.2  # type: ignore[arg-type]
    )
    grader = FakeGrader()
    app = create_app(settings, grader_factory=grader.factory)
    with (
        platform_process(f"https://localhost:{port}", cert, tmp / "platform.log") as platform,
        tls_server(app, port, cert, key) as url,
    ):
        with transaction(app.state.grader.session_factory) as session:
            reg = platform.registration()
            reg = {**reg, "auth_token_url": f"{platform.url}/tokens", "deployment_ids": tuple(reg["deployment_ids"])}
            add_platform(session, Registration(**reg))
        yield Lti(url, platform, app, cert, grader, settings)


def _page(lti: Lti, browser: httpx.Client, slug: str) -> httpx.Response:
    page = browser.get(f"{lti.tool}/dashboard/lti", params={"course": slug})
    assert page.status_code == 200, page.text[-400:]
    return page


def _press(lti: Lti, browser: httpx.Client, slug: str, button: str) -> httpx.Response:
    csrf = unescape(re.search(r'name="csrf" value="([^"]+)"', _page(lti, browser, slug).text).group(1))  # type: ignore[union-attr]
    return browser.post(
        f"{lti.tool}/dashboard/lti/{button}",
        data={"csrf": csrf, "course": slug},
        headers={"Origin": lti.tool},
        follow_redirects=False,
    )


def _platforms_cli(lti: Lti, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COLUMNS", "500")  # one table row per platform, unwrapped
    listed = lti.cli("lti", "platforms")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    return " ".join(listed.stdout.split())


def test_a_wrong_token_url_is_shown_until_the_next_success(wrong: Lti, monkeypatch: pytest.MonkeyPatch) -> None:
    wrong.platform.people(PEOPLE, {"W1": {"title": "Wrong", "label": "WRONG-101"}})
    wrong.platform.post("/test/roster/W1", {"members": [{"user_id": "w-prof", "roles": [STAFF]}]})
    with wrong.client() as prof:
        lti_continue(prof, wrong.tool, launch(prof, wrong.platform, user="prof", context="W1"))  # no token needed
        assert "failed" not in _platforms_cli(wrong, monkeypatch)  # nothing failed yet
        assert _press(wrong, prof, SLUG, "roster").status_code == 303
        state, said = finished_request(wrong, SLUG, "roster")
        page = _page(wrong, prof, SLUG)
        assert state == "failed" and "answered HTTP 404" in said, said
        failure = re.search(r'<p class="notice" id="lti-platform-failure" role="alert">(.*?)</p>', page.text)
        assert failure, page.text[-1500:]
        assert "Test LMS: its token URL failed: an access token from Test LMS" in unescape(failure.group(1))
        assert "answered HTTP 404" in failure.group(1) and "<time datetime=" in failure.group(1)
        dashboard = prof.get(f"{wrong.tool}/dashboard", params={"course": SLUG})  # the course's dashboard too
        assert 'id="lms-failure"' in dashboard.text and "its token URL failed" in dashboard.text, dashboard.text[-800:]
        listed = _platforms_cli(wrong, monkeypatch)
        assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC: its token URL failed: an access token from Test LMS", listed)

        # the administrator corrects the registration; the next press works and clears it
        with transaction(wrong.state.session_factory) as session:
            session.execute(update(LtiPlatform).values(auth_token_url=f"{wrong.platform.url}/token"))
        assert _press(wrong, prof, SLUG, "roster").status_code == 303
        assert finished_request(wrong, SLUG, "roster")[0] == "done"
        page = _page(wrong, prof, SLUG)
        assert 'id="lti-platform-failure"' not in page.text and 'data-state="done"' in page.text
        assert 'id="lms-failure"' not in prof.get(f"{wrong.tool}/dashboard", params={"course": SLUG}).text
        assert "token URL failed" not in _platforms_cli(wrong, monkeypatch)


def test_a_wrong_key_set_url_is_shown_and_cleared(wrong: Lti, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platforms, "MISS_COOLDOWN", timedelta(0))  # every launch may refresh (the tool runs here)
    with transaction(wrong.state.session_factory) as session:
        session.execute(update(LtiPlatform).values(jwks_url=f"{wrong.platform.url}/keys.json"))
    wrong.platform.post("/test/rotate-key")  # a key the tool has not cached: the launch refreshes the set
    with wrong.client() as prof:
        refused = launch(prof, wrong.platform, user="prof", context="W1").response
        assert refused.status_code == 502 and "could not be read" in refused.text, refused.text[-400:]
    listed = _platforms_cli(wrong, monkeypatch)
    assert "its key set (JWKS) URL failed: the key set of Test LMS" in listed and "HTTP 404" in listed
    with transaction(wrong.state.session_factory) as session:
        session.execute(update(LtiPlatform).values(jwks_url=f"{wrong.platform.url}/jwks"))
    with wrong.client() as prof:
        lti_continue(prof, wrong.tool, launch(prof, wrong.platform, user="prof", context="W1"))
        assert 'id="lti-platform-failure"' not in _page(wrong, prof, SLUG).text
    assert "failed" not in _platforms_cli(wrong, monkeypatch)


def test_a_failure_message_is_capped(wrong: Lti) -> None:
    with transaction(wrong.state.session_factory) as session:
        platform_id = session.scalar(select(LtiPlatform.id))
        assert platform_id is not None
        service_failed(session, platform_id, platforms.TOKEN, "x" * 100_000, utcnow())
    with wrong.state.session_factory() as session:
        assert len(session.scalar(select(LtiPlatform.failure)) or "") == FAILURE_CHARS
    with transaction(wrong.state.session_factory) as session:  # as it was (the next success clears it)
        session.execute(update(LtiPlatform).values(failed_service=None, failed_at=None, failure=None))


# --- a slow LMS: the press returns at once; a second press while it runs is refused ---------------


@pytest.fixture(scope="module")
def slow(lti: Lti) -> Iterator[SlowRoster]:
    yield from served_and_registered(lti, SlowRoster)


def test_a_slow_lms_never_holds_the_request_and_a_second_press_is_refused(lti: Lti, slow: SlowRoster) -> None:
    prof = "h-prof-SLOW1"
    lti.client().get(f"{lti.tool}/lti/jwks")  # the tool's key exists
    slow.listed = [{"user_id": prof, "roles": [STAFF], "status": "Active", "name": "Prof"}]
    with lti.client() as staff:
        slug = _hostile_course(staff, lti, slow, "SLOW1")
        pressed = _press(lti, staff, slug, "roster")
        assert pressed.status_code == 303  # answered while the LMS has not (it waits for release)
        assert slow.asked.wait(60), "the job did not ask the LMS"
        running = _page(lti, staff, slug)
        assert 'id="lti-task-roster" data-state="running"' in running.text, running.text[-1200:]
        again = _press(lti, staff, slug, "roster")
        assert again.status_code == 409 and "already queued or running" in again.text, again.text[-400:]
        slow.release.set()
        state, said = finished_request(lti, slug, "roster")
        assert state == "done" and "Added 0" in said, said
        done = _page(lti, staff, slug)
        assert 'id="lti-task-roster" data-state="done"' in done.text and "unchanged" in done.text
        after = _press(lti, staff, slug, "roster")  # done: it may be asked again
        assert after.status_code == 303
        assert finished_request(lti, slug, "roster")[0] == "done"
    with lti.state.session_factory() as session:
        link_id = session.scalar(
            select(LtiContext.id).join(Course, Course.id == LtiContext.course_id).where(Course.slug == slug)
        )
        rows = session.scalar(select(func.count()).select_from(LtiTask).where(LtiTask.context_id == link_id))
    assert rows == 1  # one status row per course and kind, reused: no second job was queued
