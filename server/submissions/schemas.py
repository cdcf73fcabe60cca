"""Wire types for submissions, separate from the tables.

The public types have no field for the source, expected values or hidden case data, so
they cannot leak by accident.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from server.models import Status, Verdict


class SubmissionCreate(BaseModel):
    """``POST /submissions`` body."""

    exercise: str = Field(min_length=1, max_length=64, examples=["actor-loss"])
    source: str = Field(description="The learner's Python file, UTF-8 text.")
    course: str | None = Field(
        default=None, max_length=64,
        description="Course slug; may be left out when the learner is in one course only.",
    )


class CheckPublic(BaseModel):
    """One check's outcome as the learner sees it."""

    name: str
    weight: float
    passed: bool
    message: str
    misconception: str | None


class LateFields(BaseModel):
    """Where a submission stands against its course's due date."""

    course: str = Field(description="Slug of the course it was submitted to.")
    late: bool = Field(description="Submitted after the learner's due date (extension included).")
    late_seconds: int | None = Field(description="Seconds past the due date; null when on time.")
    penalty_percent: float = Field(description="Percent of the raw score the late policy takes off.")
    counted_score: float | None = Field(
        description="The score that counts on boards and in the gradebook: `score` less the penalty."
    )


class SubmissionPublic(LateFields):
    """One submission with its verdict and per-check results; ``score`` is the raw score."""

    id: int
    exercise: str
    user: str
    status: Status
    verdict: Verdict | None
    score: float | None
    message: str
    checks: list[CheckPublic]
    stdout: str
    stderr: str
    timings: dict[str, Any]
    peak_memory_bytes: int | None
    cpu_seconds: float | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    queue_position: int | None = Field(
        description="Queued submissions ahead of this one; null unless status is queued."
    )


class SubmissionSummary(LateFields):
    """One row of ``GET /submissions``: no checks, output or source."""

    id: int
    exercise: str
    user: str
    status: Status
    verdict: Verdict | None
    score: float | None
    message: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
