"""Review 7: the in-process queue and its worker, through the running service (the real app,
one in-process worker, the real jail, SQLite). Each test asserts what a safe service does and
reads order and counts from the stored rows, never how long anything took.

Attempts that failed (the service held):

- one learner's five jobs that each run to the wall limit, then another learner's honest job:
  the other job starts as soon as the running one ends (the pick takes the learner with the
  fewest running, then the one served longest ago)
- another learner's ``Idempotency-Key`` replayed: a new row of one's own, never theirs
- the same key sent twice at once by one learner: one row
"""

from __future__ import annotations

import threading
from datetime import datetime

import pytest

from tests.hostile import sources as H
from tests.hostile.test_attack_feedback_policy_leaks import Service, service  # noqa: F401  (the module's own service)

pytestmark = pytest.mark.slow

#: Runs to the jail's wall limit at import (a ``time_limit``: the longest a job can hold a worker).
SLOW = "import time\ntime.sleep(60)\n"


def _post(service: Service, user: str, source: str, key: str | None = None) -> tuple[int, int]:
    headers = {**service.headers[user], **({"Idempotency-Key": key} if key else {})}
    answer = service.client.post("/api/v1/submissions", headers=headers,
                                 json={"exercise": "actor-loss", "source": source, "course": "p-full"})
    assert answer.status_code in (200, 202), answer.text
    return answer.status_code, answer.json()["id"]


def _wait(service: Service, user: str, sid: int) -> dict:
    for _ in range(2400):
        body = service.client.get(f"/api/v1/submissions/{sid}?wait=1", headers=service.headers[user]).json()
        if body["status"] == "done":
            return body
    raise AssertionError(f"submission {sid} not done")


def test_one_learners_slow_jobs_hold_another_behind_the_running_one_only(service: Service) -> None:
    flood = [_post(service, "ann", SLOW)[1] for _ in range(5)]
    _, other = _post(service, "bea", H.HONEST)
    mine = _wait(service, "bea", other)
    assert mine["verdict"] == "graded" and mine["score"] == 100
    done = [_wait(service, "ann", sid) for sid in flood]
    assert {d["verdict"] for d in done} == {"time_limit"}, [d["verdict"] for d in done]
    started = {sid: datetime.fromisoformat(service.as_("prof", sid)["started_at"]) for sid in [*flood, other]}
    # at most one of the flood's jobs (the one running when bea sent hers) started before hers
    assert sum(started[sid] < started[other] for sid in flood) <= 1, started


def test_another_learners_idempotency_key_gives_a_row_of_ones_own(service: Service) -> None:
    _, theirs = _post(service, "cal", H.HONEST, key="shared-key-1")
    status, mine = _post(service, "dan", "def compute_actor_loss(*a, **k):\n    return 0\n", key="shared-key-1")
    assert status == 202 and mine != theirs
    assert service.as_("prof", theirs)["user"] == "cal" and service.as_("prof", mine)["user"] == "dan"
    assert _wait(service, "cal", theirs)["score"] == 100


def test_one_key_sent_twice_at_once_makes_one_row(service: Service) -> None:
    ids: list[int] = []
    lock = threading.Lock()

    def send() -> None:
        _, sid = _post(service, "eve", H.HONEST, key="race-key-7")
        with lock:
            ids.append(sid)

    threads = [threading.Thread(target=send) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(ids)) == 1, ids
    assert _wait(service, "eve", ids[0])["score"] == 100
