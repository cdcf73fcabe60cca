"""Wire types for exercise statistics."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ScoreBucket(BaseModel):
    """Scores in ``[low, high]`` (buckets 0-9, 10-19, ..., 90-99, and 100 alone)."""

    low: int
    high: int
    learners: int = Field(description="Learners whose score that counts (late penalty, override) is in this bucket.")
    submissions: int = Field(description="Graded submissions with a score in this bucket.")


class CheckStats(BaseModel):
    """How often one check failed among graded submissions."""

    name: str = Field(description="The check's sentence as the catalogue words it now.")
    check_id: str | None = Field(description="Its stable id; null for results stored before ids.")
    runs: int
    failures: int
    failure_rate: float


class MisconceptionStats(BaseModel):
    """A named misconception and how many learners hit it at least once."""

    misconception: str = Field(description="The mistake's title as the catalogue words it now.")
    mistake_id: str | None = Field(description="Its stable id; null for results stored before ids.")
    learners: int
    submissions: int


class ExerciseStats(BaseModel):
    """``GET /exercises/{slug}/stats``; learners only (instructors' runs are left out)."""

    exercise: str
    submissions: int = Field(description="All submissions, any status.")
    graded_submissions: int
    learners_attempted: int = Field(description="Learners with a finished attempt (internal errors excluded).")
    learners_solved: int = Field(description="Learners whose score that counts is 100 (excused ones are not).")
    score_distribution: list[ScoreBucket]
    checks: list[CheckStats] = Field(description="By failure rate, highest first.")
    misconceptions: list[MisconceptionStats] = Field(description="By learners, most first.")
