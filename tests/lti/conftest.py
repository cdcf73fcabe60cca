"""Fixtures of the LTI tests: a tool (the real app, over https, in a thread of the test; its
grader a fake where grading is not the subject) and an independent platform in its own process
(``tests/lti/platform``), registered with each other as an administrator would."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest
from fastapi import FastAPI

from server.app import create_app
from server.config import Settings
from server.db import transaction
from server.lti.platforms import Registration, add_platform
from server.state import AppState
from tests.lti.servers import Platform, free_port, launch, make_certificate, platform_process, tls_server
from tests.server.fakes import FakeGrader

STAFF = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
TA = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTITUTION_STUDENT = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Student"
SECRET = "lti-tests-secret-" + "s" * 32


@dataclass
class Lti:
    """A tool and a platform that know each other."""

    tool: str
    platform: Platform
    app: FastAPI
    cert: Path
    grader: FakeGrader
    settings: Settings

    @property
    def state(self) -> AppState:
        return self.app.state.grader  # type: ignore[no-any-return]

    def client(self) -> httpx.Client:
        """A browser-like client: keeps cookies, follows redirects, trusts the tool's certificate."""
        return httpx.Client(verify=str(self.cert), follow_redirects=True, timeout=60)

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``ppo-grader ARGS`` on the tool's database, as an administrator runs it."""
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("PPO_GRADER_")},
            "PPO_GRADER_DATABASE_URL": self.settings.DATABASE_URL,
            "PPO_GRADER_SECRET_KEY": SECRET,
        }
        return subprocess.run(
            [str(Path(sys.executable).parent / "ppo-grader"), *args], env=env, capture_output=True, text=True, timeout=120
        )


def pick_exercises(lti: Lti, browser: httpx.Client, user: str, context: str, *exercises: str, whole_set: bool = False) -> httpx.Response:
    """Deep linking as an instructor does it: open the picker from the LMS, tick ``exercises``,
    send; the answer is posted back to the LMS (what launch.js does in a browser)."""
    picker = launch(browser, lti.platform, user=user, context=context, message="deeplink").response
    assert picker.status_code == 200, picker.text[-500:]
    action = re.search(r'<form id="lti-picker" method="post" action="([^"]+)"', picker.text).group(1)  # type: ignore[union-attr]
    fields = [("exercise", slug) for slug in exercises] + ([("whole-set", "1")] if whole_set else [])
    answer = browser.post(
        lti.tool + unescape(action),
        content=urlencode(fields),
        headers={"Origin": lti.tool, "Content-Type": "application/x-www-form-urlencoded"},
    )
    assert answer.status_code == 200, answer.text[-500:]
    return_url = unescape(re.search(r'<form id="lti-answer" method="post" action="([^"]+)"', answer.text).group(1))  # type: ignore[union-attr]
    assert return_url.startswith(lti.platform.url) and lti.platform.url in answer.headers["content-security-policy"]
    jwt = unescape(re.search(r'name="JWT" value="([^"]+)"', answer.text).group(1))  # type: ignore[union-attr]
    done = browser.post(return_url, data={"JWT": jwt})
    assert done.status_code == 200, done.text
    return done


@pytest.fixture(scope="module")
def lti(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lti]:
    tmp = tmp_path_factory.mktemp("lti")
    cert, key = make_certificate(tmp)
    port = free_port()
    settings = Settings(
        DATABASE_URL=f"sqlite:///{tmp}/tool.db", WORKERS=1, SECRET_KEY=SECRET, LTI_POLL_SECONDS=0.2  # type: ignore[arg-type]
    )
    grader = FakeGrader()
    app = create_app(settings, grader_factory=grader.factory)
    with platform_process(f"https://localhost:{port}", cert, tmp / "platform.log") as platform:
        with tls_server(app, port, cert, key) as url:
            state: AppState = app.state.grader
            with transaction(state.session_factory) as session:
                reg = platform.registration()
                add_platform(session, Registration(**{**reg, "deployment_ids": tuple(reg["deployment_ids"])}))
            yield Lti(url, platform, app, cert, grader, settings)


def lms_page_button(browser: httpx.Client, lti: Lti, course: str, button: str) -> httpx.Response:
    """A button of the course's LMS page (``roster``, ``compare``, ``grades``, ``auto``) pressed
    by its signed-in instructor, as the page's form sends it (its CSRF token, the tool's
    Origin); the tool's answer, unfollowed (a 303 back to the page once accepted)."""
    page = browser.get(f"{lti.tool}/dashboard/lti", params={"course": course})
    assert page.status_code == 200, page.text[-400:]
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
    return browser.post(
        f"{lti.tool}/dashboard/lti/{button}",
        data={"csrf": unescape(csrf), "course": course},
        headers={"Origin": lti.tool},
        follow_redirects=False,
    )


def finished_request(lti: Lti, course: str, kind: str, timeout: float = 60) -> tuple[str, str]:
    """Wait for the background job to finish the course's last ``kind`` request of its LMS page
    (``server.lti.tasks``: ``roster`` or ``compare``); its (state, outcome). A deadline, not a
    measure: the test asserts what the job did, never how long it took."""
    from sqlalchemy import select

    from server.models import Course, LtiContext, LtiTask

    deadline = time.monotonic() + timeout
    while True:
        with lti.state.session_factory() as session:
            row = session.scalar(
                select(LtiTask)
                .join(LtiContext, LtiContext.id == LtiTask.context_id)
                .join(Course, Course.id == LtiContext.course_id)
                .where(Course.slug == course, LtiTask.kind == kind)
            )
            if row is not None and row.state in ("done", "failed"):
                return row.state, row.outcome or ""
        assert time.monotonic() < deadline, f"the {kind} request of {course} did not finish"
        time.sleep(0.05)
