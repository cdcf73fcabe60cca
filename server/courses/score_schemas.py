"""Wire types for the score that counts and its corrections (``server.courses.counted``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import ClassVar, Literal

from pydantic import BaseModel, Field

from server.openapi import RenamedFields, old_name
from server.vocabulary import MAX_REASON_CHARS


class CorrectionPublic(BaseModel):
    """A hand correction in force: who made it, when (course's zone) and why."""

    score: float | None = Field(description="The hand score (overrides); null for an excuse.")
    reason: str
    made_by: str
    made_at: datetime


class ScorePublic(RenamedFields):
    """One learner's score that counts on one exercise of a course, and everything it comes from."""

    renamed: ClassVar[Mapping[str, str]] = {"shown": "described"}

    learner: str
    display_name: str
    exercise: str
    counted_score: float | None = Field(description="The score that counts; null when excused or never attempted.")
    raw_best_score: float | None = Field(description="The best raw score over graded runs.")
    counted_submission_id: int | None = Field(description="The submission that counts (null: none graded).")
    late: bool = Field(description="The submission that counts was late (false under an override).")
    late_seconds: int | None
    penalty_percent: float = Field(description="Its late penalty, in percent of its raw score.")
    extended_to: datetime | None = Field(description="The learner's extended due date, in the course's zone.")
    override: CorrectionPublic | None
    excused: CorrectionPublic | None
    attempts: int
    described: str = Field(
        description="The score as every page and terminal writes it, e.g. `90 (raw 100, late 1h: -10%)`."
    )
    shown: str | None = old_name("described")


class CourseScores(BaseModel):
    """``GET /courses/{course}/scores``."""

    course: str
    time_zone: str
    scores: list[ScorePublic]


class OverrideIn(BaseModel):
    """``PUT /courses/{course}/scores/{user}/{exercise}/override``."""

    score: float = Field(ge=0, le=100)
    reason: str = Field(min_length=1, max_length=MAX_REASON_CHARS)


class ExcuseIn(BaseModel):
    """``PUT /courses/{course}/scores/{user}/{exercise}/excuse``."""

    reason: str = Field(min_length=1, max_length=MAX_REASON_CHARS)


class TakenBack(BaseModel):
    """``DELETE .../override`` or ``.../excuse``: how many corrections were revoked (0: none was in force)."""

    kind: Literal["override", "excuse"]
    revoked: int
    score: ScorePublic


class CourseSettings(BaseModel):
    """``PATCH /courses/{course}/settings``: what an instructor sets per course."""

    board_real_names: bool = Field(
        description="Learners see classmates' display names on the boards (false, the default: pseudonyms)."
    )
