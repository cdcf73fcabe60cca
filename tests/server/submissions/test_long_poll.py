"""``GET /submissions/{id}?wait=S``: answers as soon as the verdict is stored, or after S."""

from __future__ import annotations

import threading
import time

import pytest

from tests.server.conftest import Api
from tests.server.fakes import FakeGrader


@pytest.fixture
def grader() -> FakeGrader:
    return FakeGrader(gated=True)  # held until the test opens the gate


def test_a_long_poll_answers_as_soon_as_the_verdict_is_stored(api: Api, grader: FakeGrader) -> None:
    learner = api.user("ada")
    sid = api.submit(learner).json()["id"]
    assert grader.started.wait(10)
    opened_at: list[float] = []

    def release() -> None:
        time.sleep(0.4)
        opened_at.append(time.monotonic())
        grader.gate.set()

    threading.Thread(target=release).start()
    t0 = time.monotonic()
    body = api.client.get(f"/api/v1/submissions/{sid}?wait=10", headers=learner).json()
    answered = time.monotonic()
    assert body["status"] == "done" and body["score"] == 75
    assert answered - t0 >= 0.35  # it waited for the verdict ...
    assert answered - opened_at[0] < 5.0  # ... and answered after it, not at the 10 s limit
    assert api.state.announcer.waiting() == 0


def test_a_long_poll_times_out_with_the_current_state(api: Api, grader: FakeGrader) -> None:
    learner = api.user("ada")
    sid = api.submit(learner).json()["id"]
    t0 = time.monotonic()
    body = api.client.get(f"/api/v1/submissions/{sid}?wait=0.3", headers=learner).json()
    assert 0.25 <= time.monotonic() - t0 < 5
    assert body["status"] in ("queued", "running")
    grader.gate.set()
    assert api.wait_done(learner, sid)["status"] == "done"


@pytest.mark.parametrize("wait", ["-1", "31", "soon"])
def test_a_wait_out_of_range_is_a_422(api: Api, wait: str) -> None:
    learner = api.user("ada")
    response = api.client.get(f"/api/v1/submissions/1?wait={wait}", headers=learner)
    assert response.status_code == 422


def test_a_long_poll_never_reveals_someone_elses_submission(api: Api, grader: FakeGrader) -> None:
    ada, bob = api.user("ada"), api.user("bob")
    sid = api.submit(ada).json()["id"]
    assert api.client.get(f"/api/v1/submissions/{sid}?wait=1", headers=bob).status_code == 404
    grader.gate.set()


#: The pause of a long poll beyond the cap, shortened for the tests (5 s when served).
PAUSE = 0.5


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The length of every pause a long poll beyond its user's cap takes."""
    from server.submissions import router, waiting

    taken: list[float] = []
    pause = waiting.Subscription.pause

    async def counted(self: waiting.Subscription, seconds: float) -> None:
        taken.append(seconds)
        await pause(self, seconds)

    monkeypatch.setattr(router, "OVER_CAP_PAUSE_SECONDS", PAUSE)
    monkeypatch.setattr(waiting.Subscription, "pause", counted)
    return taken


def test_one_user_keeps_at_most_the_cap_of_long_polls_waiting(
    api: Api, grader: FakeGrader, pauses: list[float]
) -> None:
    """Review 8: one learner's idle long polls held the API. Beyond MAX_LONG_POLLS_PER_USER
    waiting at once, a poll answers with the row as it is after a pause (answered at once, a
    hostile client's extra polls were a request flood); another user still waits."""
    most = api.state.settings.MAX_LONG_POLLS_PER_USER
    ada, bob = api.user("ada"), api.user("bob")
    sid = api.submit(ada).json()["id"]
    bobs = api.submit(bob).json()["id"]
    assert grader.started.wait(10)
    answers: list[dict] = []
    polls = [
        threading.Thread(
            target=lambda who=who, s=s: answers.append(
                api.client.get(f"/api/v1/submissions/{s}?wait=20", headers=who).json()
            )
        )
        for who, s in [(ada, sid)] * most + [(bob, bobs)]
    ]
    for poll in polls:
        poll.start()
    for _ in range(400):
        if api.state.announcer.waiting() == most + 1:
            break
        time.sleep(0.05)
    assert api.state.announcer.waiting() == most + 1  # ada's cap, and bob's own poll, all wait
    beyond = api.client.get(f"/api/v1/submissions/{sid}?wait=20", headers=ada).json()
    assert beyond["status"] in ("queued", "running")  # answered before the verdict: the gate is still shut
    assert pauses == [PAUSE]  # one pause between its two reads, of the pause's length, not the 20 s asked
    assert api.state.announcer.waiting() == most + 1 and not answers
    grader.gate.set()
    for poll in polls:
        poll.join(30)
    assert len(answers) == most + 1 and all(a["status"] == "done" for a in answers)
    assert api.state.announcer.waiting() == 0


# -- the same long poll inside POST /submissions?wait= (issue 38: one request per submit) --------


def _post(api: Api, who: dict[str, str], query: str = "?wait=20", source: str = "x = 1\n") -> dict:
    answer = api.client.post(f"/api/v1/submissions{query}", json={"exercise": "actor-loss", "source": source},
                             headers=who)
    assert answer.status_code == 202, answer.text
    return answer.json()


def test_a_post_with_wait_answers_when_the_verdict_is_stored(api: Api, grader: FakeGrader) -> None:
    learner = api.user("ada")
    answers: list[dict] = []
    post = threading.Thread(target=lambda: answers.append(_post(api, learner, "?wait=10")))
    post.start()
    deadline = time.monotonic() + 30  # a deadline for the thread to start waiting, not a measure
    while api.state.announcer.waiting() == 0 and post.is_alive():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert api.state.announcer.waiting() == 1 and not answers  # held inside the POST: the gate is shut
    grader.gate.set()
    post.join(30)
    [body] = answers
    assert body["status"] == "done" and body["score"] == 75  # the verdict, on the same request
    assert api.state.announcer.waiting() == 0


def test_a_post_whose_wait_runs_out_answers_with_the_stored_row(api: Api, grader: FakeGrader) -> None:
    learner = api.user("ada")
    body = _post(api, learner, "?wait=0.3")
    assert body["status"] in ("queued", "running")  # not lost: graded, and read, later
    grader.gate.set()
    assert api.wait_done(learner, body["id"])["status"] == "done"


def test_a_post_beyond_the_long_poll_cap_answers_at_once(api: Api, grader: FakeGrader, pauses: list[float]) -> None:
    """The POST's wait takes one of the user's MAX_LONG_POLLS_PER_USER places: with all taken
    it stores the submission and answers at once (the client then waits on GET)."""
    most = api.state.settings.MAX_LONG_POLLS_PER_USER
    ada = api.user("ada")
    first = _post(api, ada, "")
    assert grader.started.wait(10)
    answers: list[dict] = []
    polls = [
        threading.Thread(
            target=lambda: answers.append(
                api.client.get(f"/api/v1/submissions/{first['id']}?wait=20", headers=ada).json()
            )
        )
        for _ in range(most)
    ]
    for poll in polls:
        poll.start()
    for _ in range(400):
        if api.state.announcer.waiting() == most:
            break
        time.sleep(0.05)
    assert api.state.announcer.waiting() == most
    beyond = _post(api, ada, "?wait=20", source="x = 2\n")
    assert beyond["status"] == "queued" and beyond["id"] != first["id"]  # stored, answered at once
    assert pauses == []  # the submit rate limit bounds a POST: it does not pause
    grader.gate.set()
    for poll in polls:
        poll.join(30)
    assert len(answers) == most
    assert api.wait_done(ada, beyond["id"])["status"] == "done"


def test_a_post_waiting_when_the_server_stops_answers_with_the_stored_row(api: Api, grader: FakeGrader) -> None:
    from server.app import begin_shutdown

    ada = api.user("ada")
    answers: list = []
    post = threading.Thread(target=lambda: answers.append(api.client.post(
        "/api/v1/submissions?wait=20", json={"exercise": "actor-loss", "source": "x = 1\n"}, headers=ada)))
    post.start()
    for _ in range(400):
        if api.state.announcer.waiting() == 1:
            break
        time.sleep(0.05)
    assert api.state.announcer.waiting() == 1
    begin_shutdown(api.client.app)  # type: ignore[arg-type]
    post.join(20)
    assert answers and answers[0].status_code == 202  # stored: not a 503 the client would resend
    assert answers[0].json()["status"] in ("queued", "running")
    grader.gate.set()
