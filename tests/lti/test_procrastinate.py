"""The automatic mode on the scale-out queue: PostgreSQL, procrastinate, a real ``ppo-grader
worker`` process. A course's grades job is one procrastinate job per course (its queueing lock
keeps a second from piling up), below grading in priority, and the worker that grades the
submission sends its counted score to the independent platform."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select, text

from server.app import create_app
from server.courses.sets import publish
from server.db import transaction
from server.grading.procrastinate_backend import ProcrastinateQueue
from server.lti import tasks
from server.lti.jobs import PRIORITY, TASK_NAME, defer_job
from server.lti.platforms import Registration, add_platform
from server.models import Course, LtiContext, User
from server.submissions.schemas import SubmissionCreate
from server.submissions.service import create_submission
from tests.lti.conftest import LEARNER, STAFF
from tests.lti.servers import Platform, free_port, launch, lti_continue, make_certificate, platform_process, tls_server
from tests.pg import pg_database, pg_url  # noqa: F401  (fixtures)
from tests.scaleout.conftest import REFERENCE, Cluster, cluster  # noqa: F401  (fixture)

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

PEOPLE = {
    "prof": {"sub": "p-prof", "login": "prof", "name": "John McCarthy", "roles": {"Q1": [STAFF]}},
    "ada": {"sub": "p-ada", "login": "ada", "name": "Ada Lovelace", "roles": {"Q1": [LEARNER]}},
}


@pytest.fixture
def linked(cluster: Cluster, tmp_path: Path) -> Iterator[tuple[str, Platform, Path]]:  # noqa: F811
    cert, key = make_certificate(tmp_path)
    port = free_port()
    with platform_process(f"https://localhost:{port}", cert, tmp_path / "platform.log") as platform:
        with tls_server(create_app(cluster.settings), port, cert, key) as url:
            with transaction(cluster.sessions) as session:
                reg = platform.registration()
                add_platform(session, Registration(**{**reg, "deployment_ids": tuple(reg["deployment_ids"])}))
            platform.people(PEOPLE, {"Q1": {"title": "Queued", "label": "Q-1"}})
            for name in ("prof", "ada"):
                with httpx.Client(verify=str(cert), follow_redirects=True, timeout=60) as browser:
                    assert lti_continue(browser, url, launch(browser, platform, user=name, context="Q1")).status_code == 200
            yield url, platform, cert


def test_the_grades_job_runs_on_a_procrastinate_worker(cluster: Cluster, linked: tuple[str, Platform, Path]) -> None:  # noqa: F811
    _, platform, _ = linked
    with transaction(cluster.sessions) as session:
        course = session.scalar(select(Course).where(Course.slug == "q-1"))
        assert course is not None
        publish(session, course, "actor-loss")
        link = session.scalar(select(LtiContext).where(LtiContext.course_id == course.id))
        assert link is not None
        link.auto_grades = True
        link_id = link.id
    with cluster.sessions() as session:
        ada = session.scalar(select(User).where(User.name == "ada"))
        create_submission(
            session, ProcrastinateQueue(cluster.settings), ada,  # type: ignore[arg-type]
            SubmissionCreate(exercise="actor-loss", source=REFERENCE, course="q-1"),
            max_source_bytes=cluster.settings.MAX_SOURCE_BYTES, idempotency_key=None, max_queued=None,
        )
    assert defer_job(cluster.sessions, link_id) is True
    assert defer_job(cluster.sessions, link_id) is False  # its queueing lock: one waiting job per course
    with cluster.sessions() as session:
        jobs = session.execute(text("SELECT task_name, priority, args FROM procrastinate_jobs ORDER BY id")).all()
    assert [tuple(j) for j in jobs if j[0] == TASK_NAME] == [(TASK_NAME, PRIORITY, {"link_id": link_id})]

    cluster.start_worker()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        sent = [s for s in platform.state()["scores"] if s["userId"] == "p-ada"]
        if sent:
            break
        time.sleep(0.5)
    else:
        cluster.wait(lambda: False, timeout=0, what="the score at the platform")
    assert [s["scoreGiven"] for s in sent] == [100]
    [item] = platform.state()["line_items"]
    assert (item["resourceId"], item["tag"]) == ("actor-loss", "ppo-grader")


def test_the_lms_pages_roster_button_runs_on_a_procrastinate_worker(cluster: Cluster, linked: tuple[str, Platform, Path]) -> None:  # noqa: F811
    """The press defers one ``ppo_grader.lti_task`` job (no LMS call in the request); a second
    press while it waits is refused; a worker runs it, and the page's status row says done."""
    url, platform, cert = linked
    platform.post("/test/roster/Q1", {"members": [{"user_id": "p-prof", "roles": [STAFF]}]})  # ada left the course
    with httpx.Client(verify=str(cert), follow_redirects=True, timeout=60) as prof:
        lti_continue(prof, url, launch(prof, platform, user="prof", context="Q1"))
        page = prof.get(f"{url}/dashboard/lti", params={"course": "q-1"})
        csrf = unescape(re.search(r'name="csrf" value="([^"]+)"', page.text).group(1))  # type: ignore[union-attr]
        form = {"csrf": csrf, "course": "q-1"}
        pressed = prof.post(f"{url}/dashboard/lti/roster", data=form, headers={"Origin": url})
        assert pressed.status_code == 200 and 'id="lti-task-roster" data-state="queued"' in pressed.text
        again = prof.post(f"{url}/dashboard/lti/roster", data=form, headers={"Origin": url})
        assert again.status_code == 409 and "already queued or running" in again.text
        with cluster.sessions() as session:
            jobs = session.execute(text("SELECT task_name, args FROM procrastinate_jobs ORDER BY id")).all()
        assert [j[0] for j in jobs if j[0] == tasks.TASK_NAME] == [tasks.TASK_NAME]
        cluster.start_worker()
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            shown = prof.get(f"{url}/dashboard/lti", params={"course": "q-1"}).text
            if 'id="lti-task-roster" data-state="done"' in shown:
                break
            time.sleep(0.5)
        else:
            cluster.wait(lambda: False, timeout=0, what="the roster request done")
    assert "dropped 1," in shown and re.search(r'<tr class="dropped"><td>Ada Lovelace</td><td>ada</td>', shown)
