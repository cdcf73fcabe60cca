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


class CheckPublic(BaseModel):
    """One check's outcome as the learner sees it."""

    name: str
    weight: float
    passed: bool
    message: str
    misconception: str | None


class SubmissionPublic(BaseModel):
    """One submission with its verdict and per-check results."""

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


class SubmissionSummary(BaseModel):
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
