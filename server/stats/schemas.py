"""Wire types for exercise statistics."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from pydantic import BaseModel, Field

from server.openapi import RenamedFields, old_name


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


class MistakeStats(RenamedFields):
    """A named mistake and how many learners hit it at least once."""

    renamed: ClassVar[Mapping[str, str]] = {"misconception": "mistake_title"}

    mistake_title: str = Field(description="The mistake's title as the catalogue words it now.")
    misconception: str | None = old_name("mistake_title")
    mistake_id: str | None = Field(description="Its stable id; null for results stored before ids.")
    learners: int
    submissions: int


class ExerciseStats(RenamedFields):
    """``GET /exercises/{slug}/stats``; learners only (instructors' runs are left out)."""

    renamed: ClassVar[Mapping[str, str]] = {"misconceptions": "mistakes"}

    exercise: str
    submissions: int = Field(description="All submissions, any status.")
    graded_submissions: int
    learners_attempted: int = Field(description="Learners with a finished attempt (internal errors excluded).")
    learners_solved: int = Field(description="Learners whose score that counts is 100 (excused ones are not).")
    score_distribution: list[ScoreBucket]
    checks: list[CheckStats] = Field(description="By failure rate, highest first.")
    mistakes: list[MistakeStats] = Field(description="By learners, most first.")
    misconceptions: list[MistakeStats] | None = old_name("mistakes")
