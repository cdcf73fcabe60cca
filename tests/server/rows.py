"""Rows written straight into the database, for the instructor-side tests (boards, dashboard,
statistics, gradebooks): finished submissions with their checks, at fixed times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from server.courses.policy import counted_score
from server.db import transaction
from server.courses.best_scores import record_verdict
from server.models import DEFAULT_COURSE_ID, CheckResult, Status, Submission, User
from tests.server.conftest import Api

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    """A fixed timestamp ``minutes`` after T0, so ties are decided by us, not the clock."""
    return T0 + timedelta(minutes=minutes)


class Rows:
    """Writes finished submissions (and their checks) straight into the database."""

    def __init__(self, api: Api) -> None:
        self.api = api

    def user_id(self, name: str) -> int:
        with self.api.state.session_factory() as session:
            user = session.query(User).filter_by(name=name).one()
            return user.id

    def add(
        self,
        name: str,
        *,
        score: float | None,
        verdict: str = "graded",
        minute: float = 0,
        exercise: str = "actor-loss",
        cpu: float | None = 0.5,
        memory: int | None = 1000,
        checks: list[tuple[str, bool, str | None]] = (),  # type: ignore[assignment]
        status: str = Status.DONE,
        course_id: int = DEFAULT_COURSE_ID,
        penalty: float = 0.0,
    ) -> int:
        with transaction(self.api.state.session_factory) as session:
            row = Submission(
                user_id=self.user_id(name),
                course_id=course_id,
                penalty_percent=penalty,
                late_seconds=60 if penalty else None,
                counted_score=counted_score(score, penalty) if status == Status.DONE and verdict == "graded" else None,
                exercise=exercise,
                source="x = 1\n",
                source_sha256="0" * 64,
                status=status,
                verdict=verdict if status == Status.DONE else None,
                score=score if status == Status.DONE else None,
                cpu_seconds=cpu,
                peak_memory_bytes=memory,
                created_at=at(minute),
                finished_at=at(minute) if status == Status.DONE else None,
            )
            for position, (check, passed, mistake_title) in enumerate(checks):
                row.checks.append(
                    CheckResult(name=check, weight=10, passed=passed, message="", mistake_title=mistake_title, position=position)
                )
            session.add(row)
            session.flush()
            if status == Status.DONE:  # what storing a verdict does (server.grading.persistence)
                record_verdict(
                    session, course_id=course_id, user_id=row.user_id, exercise=exercise, submission_id=row.id,
                    created_at=row.created_at, verdict=verdict, score=score, counted_score=row.counted_score,
                )
            return row.id
