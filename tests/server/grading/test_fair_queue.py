"""Review 4, finding 12 (issue 31): one learner who keeps five slow jobs queued must not hold
another learner's verdict behind all of them. On both queues, learner B's job, queued after
A's five, is the next one taken once the job running ends: asserted by the order the jobs
are taken in, never by time."""

from __future__ import annotations

import asyncio

import pytest

from server.config import Settings
from server.db import transaction
from server.grading.procrastinate_backend import ProcrastinateQueue, build_app
from server.models import Role, User
from server.submissions.schemas import SubmissionCreate
from server.submissions.service import create_submission
from server.users.service import create_user
from tests.scaleout.conftest import REFERENCE, Cluster, cluster  # noqa: F401  (fixture)
from tests.server.conftest import StartApi
from tests.server.fakes import FakeGrader


def test_in_process_a_second_learner_goes_before_the_first_learners_queued_jobs(
    settings: Settings, start_api: StartApi
) -> None:
    grader = FakeGrader(gated=True)  # every job sleeps until the gate opens
    api = start_api(settings.model_copy(update={"WORKERS": 1}), grader.factory)
    a, b = api.user("ann"), api.user("bob")
    first = api.submit(a, "def f():\n    return 0\n").json()["id"]
    assert grader.started.wait(10)  # the one worker is busy with A's first job
    later = [api.submit(a, f"def f():\n    return {i}\n").json()["id"] for i in range(1, 5)]
    bobs = api.submit(b).json()["id"]
    grader.gate.set()
    for sid in [first, *later]:
        api.wait_done(a, sid)
    api.wait_done(b, bobs)
    taken = [sid for _, _, sid in grader.calls]
    assert taken[:2] == [first, bobs], f"B waited behind {taken.index(bobs) - 1} of A's queued jobs: {taken}"
    assert taken[2:] == later  # A's own jobs keep their order


def test_in_process_round_robin_between_two_busy_learners() -> None:
    from server.grading.queue import InProcessQueue

    queue = InProcessQueue()
    for sid in (1, 2, 3):
        queue.enqueue(sid, owner=10)
    for sid in (4, 5):
        queue.enqueue(sid, owner=20)
    order = []
    while len(queue):
        job = queue.get()
        assert job is not None
        order.append(job.id)
        queue.finished(job)
    assert order == [1, 4, 2, 5, 3]


@pytest.mark.slow
@pytest.mark.postgres
def test_procrastinate_a_second_learner_goes_before_the_first_learners_queued_jobs(cluster: Cluster) -> None:  # noqa: F811
    with transaction(cluster.sessions) as session:
        ann = create_user(session, "ann", Role.LEARNER, cluster.settings.secret_bytes).user.id
        bob = create_user(session, "bob", Role.LEARNER, cluster.settings.secret_bytes).user.id

    def submit(user_id: int, note: str) -> int:
        with cluster.sessions() as session:
            row, _ = create_submission(
                session, ProcrastinateQueue(cluster.settings), session.get(User, user_id),  # type: ignore[arg-type]
                SubmissionCreate(exercise="actor-loss", source=REFERENCE + f"\n# {note}\n"),
                max_source_bytes=cluster.settings.MAX_SOURCE_BYTES, idempotency_key=None, max_queued=5,
            )
            return row.id

    anns = [submit(ann, f"ann {i}") for i in range(5)]
    bobs = submit(bob, "bob")

    async def taken_in_order() -> list[int]:
        app = build_app(cluster.settings)
        async with app.open_async():
            worker = await app.job_manager.register_worker()
            order = []
            while (job := await app.job_manager.fetch_job(["cpu"], worker)) is not None:
                order.append(int(job.task_kwargs["submission_id"]))  # type: ignore[arg-type]
            return order

    order = asyncio.run(taken_in_order())
    assert order.index(bobs) == 1, f"B's job waits behind {order.index(bobs)} of A's: {order}"
    assert [sid for sid in order if sid != bobs] == anns
