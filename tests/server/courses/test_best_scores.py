"""best_scores: the upsert run with each stored verdict, and the backfill of migration 0004."""

from __future__ import annotations

import random

from sqlalchemy import select

from server.db import transaction
from server.grading.persistence import claim, store_internal_error, store_report
from server.courses.best_scores import backfill_best_scores
from server.models import BestScore, Role, Status
from tests.server.rows import Rows, at
from tests.server.conftest import Api
from tests.server.fakes import FakeReport


def _best(api: Api, name: str, rows: Rows, exercise: str = "actor-loss") -> BestScore | None:
    with api.state.session_factory() as session:
        return session.get(BestScore, (1, rows.user_id(name), exercise))


def _table(api: Api) -> list[tuple]:  # type: ignore[type-arg]
    with api.state.session_factory() as session:
        return [
            (b.course_id, b.user_id, b.exercise, b.best_score, b.attempts, b.best_reached_at, b.best_submission_id,
             b.counted_score, b.counted_reached_at, b.counted_submission_id, b.solved_at)
            for b in session.scalars(select(BestScore).order_by(BestScore.course_id, BestScore.user_id, BestScore.exercise))
        ]


def test_upsert_keeps_the_max_and_the_first_time_it_was_reached(api: Api, rows: Rows) -> None:
    api.user("ann")
    rows.add("ann", score=80, minute=5)
    later = rows.add("ann", score=90, minute=9)
    first = rows.add("ann", score=90, minute=3)  # stored later, submitted earlier: it wins
    rows.add("ann", score=90, minute=4)  # the same best again does not move the time
    rows.add("ann", score=40, minute=1)  # lower: no change
    rows.add("ann", score=None, verdict="crashed", minute=12)  # a failure never lowers it
    best = _best(api, "ann", rows)
    assert best is not None and later != first
    assert (best.best_score, best.attempts, best.best_submission_id, best.solved_at) == (90, 6, first, None)
    assert best.best_reached_at == at(3)
    rows.add("ann", score=100, minute=20)
    rows.add("ann", score=100, minute=15)
    best = _best(api, "ann", rows)
    assert best is not None
    assert (best.best_score, best.attempts, best.best_reached_at, best.solved_at) == (100, 8, at(15), at(15))


def test_internal_error_is_not_an_attempt(api: Api, rows: Rows) -> None:
    api.user("ann")
    rows.add("ann", score=None, verdict="internal_error", minute=1)
    assert _best(api, "ann", rows) is None
    rows.add("ann", score=None, verdict="syntax_error", minute=2)
    rows.add("ann", score=None, verdict="internal_error", minute=3)
    best = _best(api, "ann", rows)
    assert best is not None
    assert (best.best_score, best.attempts, best.best_reached_at) == (None, 1, None)


def test_the_worker_s_transaction_counts_the_verdict(api: Api, rows: Rows) -> None:
    api.user("ann")
    graded = rows.add("ann", score=None, status=Status.QUEUED, minute=1)
    failed = rows.add("ann", score=None, status=Status.QUEUED, minute=2)
    factory = api.state.session_factory
    with transaction(factory) as session:
        assert claim(session, graded) is not None and claim(session, failed) is not None
    with transaction(factory) as session:
        assert store_report(session, graded, FakeReport(score=75.0), output_cap=1000)
        store_internal_error(session, failed)
    best = _best(api, "ann", rows)
    assert best is not None
    assert (best.best_score, best.attempts, best.best_submission_id, best.best_reached_at) == (75, 1, graded, at(1))
    with transaction(factory) as session:  # a counted verdict taken back is re-counted
        store_internal_error(session, graded)
    best = _best(api, "ann", rows)
    assert best is None


def test_backfill_equals_the_incremental_result(api: Api, rows: Rows) -> None:
    names = ["ann", "ben", "cat", "teacher"]
    for name in names:
        api.user(name, Role.INSTRUCTOR if name == "teacher" else Role.LEARNER)
    rng = random.Random(4)
    verdicts = ["graded"] * 6 + ["crashed", "time_limit", "syntax_error", "internal_error"]
    for _ in range(120):
        verdict = rng.choice(verdicts)
        rows.add(
            rng.choice(names),
            exercise=rng.choice(["actor-loss", "gae"]),
            verdict=verdict,
            score=rng.choice([0, 25, 50, 75, 100]) if verdict == "graded" else None,
            minute=rng.randint(0, 40),  # out of order, with exact ties
            status=rng.choice([Status.DONE] * 9 + [Status.QUEUED]),
        )
    incremental = _table(api)
    assert incremental
    with transaction(api.state.session_factory) as session:
        backfill_best_scores(session)
    assert _table(api) == incremental
