"""Issue 38: while a submission is queued the API and its page give its place and, when the
server has measured its recent verdict rate, an estimate: (ahead + 1) / rate, rounded up.
The rate is counted from stored verdicts' times (written here), not timed; without recent
verdicts the estimate is absent and nothing claims a time."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from server.db import transaction
from server.models import Status, Submission
from server.submissions import service
from server.submissions.service import (
    MIN_RATE_VERDICTS,
    RATE_WINDOW_SECONDS,
    estimated_seconds,
    measured_rate,
    verdict_rate,
)
from tests.server.conftest import Api
from tests.server.dashboard.test_web import log_in
from tests.server.fakes import FakeGrader
from tests.server.rows import Rows, at

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)


def ago(seconds: float, now: datetime = NOW) -> datetime:
    return now - timedelta(seconds=seconds)


def test_the_rate_is_the_verdicts_after_the_oldest_recent_one_over_the_time_since_it() -> None:
    finished = [ago(100), ago(75), ago(50), ago(25), ago(0)]
    assert measured_rate(finished, NOW) == pytest.approx(4 / 100)
    assert estimated_seconds(0, 4 / 100) == 25 and estimated_seconds(3, 4 / 100) == 100
    assert estimated_seconds(2, 0.3) == 10  # 3 / 0.3 is 10.000000000000002 in floats
    assert estimated_seconds(0, 0.3) == 4
    # a stalled queue (nothing since) measures slower as time passes, not its old speed
    later = NOW + timedelta(seconds=100)
    assert measured_rate(finished, later) == pytest.approx(4 / 200)
    # verdicts older than the window, in the future (a skewed clock) or too few are no measurement
    assert measured_rate([ago(RATE_WINDOW_SECONDS + 1)] * 10, NOW) is None
    assert measured_rate([NOW + timedelta(seconds=5)] * 10, NOW) is None
    assert measured_rate([ago(10)] * (MIN_RATE_VERDICTS - 1), NOW) is None
    assert measured_rate([NOW] * 5, NOW) is None  # no span to measure over
    assert estimated_seconds(4, None) is None


@pytest.fixture
def grader() -> FakeGrader:
    return FakeGrader(gated=True)


def _hold_one_running(api: Api, grader: FakeGrader, learner: dict[str, str]) -> list[dict[str, Any]]:
    """One submission held running in the single worker, then two queued behind it."""
    api.submit(learner)
    assert grader.started.wait(10)
    return [api.submit(learner).json() for _ in range(2)]


def _page(api: Api, learner: dict[str, str], submission_id: object) -> str:
    assert log_in(api, learner).status_code == 303
    page = api.client.get(f"/dashboard/submissions/{submission_id}")
    assert page.status_code == 200
    return page.text


def test_without_recent_verdicts_no_time_is_claimed(api: Api, grader: FakeGrader) -> None:
    learner = api.user("ada")
    second, third = _hold_one_running(api, grader, learner)
    assert (second["queue_position"], second["estimated_seconds"]) == (0, None)
    read = api.client.get(f"/api/v1/submissions/{third['id']}", headers=learner).json()
    assert (read["queue_position"], read["estimated_seconds"]) == (1, None)
    text = _page(api, learner, third["id"])
    section = re.search(r'<section class="feedback" id="feedback">(.*?)</section>', text)
    assert section is not None and "waiting in the queue: position 2 in the queue;" in section.group(1)
    assert "about" not in section.group(1)
    grader.gate.set()
    done = api.wait_done(learner, third["id"])
    assert (done["queue_position"], done["estimated_seconds"]) == (None, None)


def test_with_a_measured_rate_the_estimate_is_the_place_over_the_rate(api: Api, grader: FakeGrader) -> None:
    learner = api.user("ada")
    grader.gate.set()
    finished = [api.wait_done(learner, api.submit(learner).json()["id"])["id"] for _ in range(5)]
    grader.gate.clear()
    grader.started.clear()
    # the five verdicts' times, written: 4 verdicts after the oldest, which finished 200 s ago
    base = datetime.now(UTC)
    with transaction(api.state.session_factory) as session:
        for sub_id, seconds in zip(finished, (200, 150, 100, 50, 0), strict=True):
            session.get(Submission, sub_id).finished_at = ago(seconds, base)  # type: ignore[union-attr]
    second, third = _hold_one_running(api, grader, learner)
    after = datetime.now(UTC)
    for answer, ahead in ((second, 0), (third, 1)):
        # the server's clock read between ``base`` and ``after``: the span is 200 s and a little
        low = math.ceil((ahead + 1) * 200 / 4)
        high = math.ceil((ahead + 1) * (200 + (after - base).total_seconds()) / 4)
        assert answer["queue_position"] == ahead
        assert low <= answer["estimated_seconds"] <= high, (answer["estimated_seconds"], low, high)
    read = api.client.get(f"/api/v1/submissions/{third['id']}?wait=0", headers=learner).json()
    assert 100 <= read["estimated_seconds"] <= 100 + math.ceil((datetime.now(UTC) - base).total_seconds() / 2) + 1
    text = _page(api, learner, third["id"])
    shown = re.search(r"waiting in the queue: position 2 in the queue, about (\d+) s;", text)
    assert shown is not None, text
    assert 100 <= int(shown.group(1)) <= 100 + math.ceil((datetime.now(UTC) - base).total_seconds() / 2) + 1
    grader.gate.set()
    done = api.wait_done(learner, third["id"])
    assert done["estimated_seconds"] is None


def test_the_measurement_reads_a_bounded_sample(rows: Rows, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the newest ``RATE_SAMPLE`` finished rows are read, however many there are: recent
    verdicts behind that many newer rows finished long ago are not counted."""
    rows.api.user("ada")
    for minute in (0, 1, 2):
        rows.add("ada", score=50, minute=minute)
    with rows.api.state.session_factory() as session:
        assert verdict_rate(session, at(3)) == pytest.approx(2 / 180)
        monkeypatch.setattr(service, "RATE_SAMPLE", 3)
        assert verdict_rate(session, at(3)) == pytest.approx(2 / 180)
    for _ in range(3):
        rows.add("ada", score=50, minute=-100)  # newer ids, finished outside the window
    with rows.api.state.session_factory() as session:
        assert verdict_rate(session, at(3)) is None
        monkeypatch.setattr(service, "RATE_SAMPLE", 6)
        assert verdict_rate(session, at(3)) == pytest.approx(2 / 180)
    queued = rows.add("ada", score=None, minute=3, status=Status.QUEUED)
    with rows.api.state.session_factory() as session:
        public = service.to_public(session, session.get(Submission, queued))  # type: ignore[arg-type]
    assert public.queue_position == 0 and public.estimated_seconds is None  # the real clock: long after T0
