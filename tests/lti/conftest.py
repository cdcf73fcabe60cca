"""Fixtures of the LTI tests: a tool (the real app, over https, in a thread of the test; its
grader a fake where grading is not the subject) and an independent platform in its own process
(``tests/lti/platform``), registered with each other as an administrator would."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from server.app import create_app
from server.config import Settings
from server.db import transaction
from server.lti.platforms import Registration, add_platform
from server.state import AppState
from tests.lti.servers import Platform, free_port, make_certificate, platform_process, tls_server
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

    @property
    def state(self) -> AppState:
        return self.app.state.grader  # type: ignore[no-any-return]

    def client(self) -> httpx.Client:
        """A browser-like client: keeps cookies, follows redirects, trusts the tool's certificate."""
        return httpx.Client(verify=str(self.cert), follow_redirects=True, timeout=60)


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
            yield Lti(url, platform, app, cert, grader)
