"""Wire types of the similarity routes (instructors only: no learner ever receives these)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import ClassVar, Literal

from pydantic import BaseModel, Field

from server.openapi import RenamedFields, old_name


class RunPublic(BaseModel):
    """One similarity run of a course."""

    id: int
    status: Literal["queued", "running", "done", "failed"]
    reason: Literal["request", "due"] = Field(description="Asked for by an instructor, or after a due date.")
    requested_at: datetime
    finished_at: datetime | None
    exercises: list[str] = Field(default_factory=list, description="What was compared (when done).")
    learners: int = 0
    submissions: int = 0
    pairs_found: int = 0
    pairs_stored: int = 0
    message: str = Field(default="", description="Why it failed.")


class ExerciseSimilarity(BaseModel):
    """A pair on one exercise: the best pair of their latest and best submissions."""

    exercise: str
    similarity: float = Field(description="0..1: the shared code's weight over each side's own, averaged.")
    submission_a: int
    submission_b: int
    shared: int = Field(description="Fingerprints in common after the starter and common code are excluded.")


class PairPublic(BaseModel):
    """One ranked pair (``learner_a`` has the lower id)."""

    rank: int
    learner_a: str
    learner_b: str
    display_name_a: str
    display_name_b: str
    score: float = Field(description="The sum over the course's exercises of the pair's similarity.")
    similar_on: int = Field(description="Exercises on which the pair is at least 0.5 similar.")
    exercises: list[ExerciseSimilarity]
    review: Literal["fine", "concern"] | None


class SimilarityReport(RenamedFields):
    """``GET /courses/{course}/similarity``: the newest finished run's pairs, and the newest run."""

    renamed: ClassVar[Mapping[str, str]] = {"shown": "pairs_run"}

    course: str
    time_zone: str = Field(default="UTC", description="The course's time zone (what `ppo-grader similarity` shows).")
    exercise: str | None = Field(description="Ranked by this exercise alone; null: over the course.")
    latest: RunPublic | None = Field(description="The newest run, whatever its state.")
    pairs_run: RunPublic | None = Field(description="The run the pairs come from: the newest finished one.")
    shown: RunPublic | None = old_name("pairs_run")
    pairs: list[PairPublic]


class SideBySide(BaseModel):
    """One exercise of a pair with both sources and the matching lines of each."""

    exercise: str
    similarity: float
    submission_a: int
    submission_b: int
    source_a: str
    source_b: str
    spans_a: list[tuple[int, int]] = Field(description="[first, last] lines (1-based) of a that b shares.")
    spans_b: list[tuple[int, int]]


class PairDetail(BaseModel):
    """``GET /courses/{course}/similarity/{a}/{b}``."""

    pair: PairPublic
    side_by_side: list[SideBySide]


class ReviewIn(BaseModel):
    """``PUT /courses/{course}/similarity/{a}/{b}/review``."""

    mark: Literal["fine", "concern"] = Field(description='"reviewed: fine" or "reviewed: concern".')


class ReviewPublic(BaseModel):
    """A pair's mark in a course."""

    course: str
    learner_a: str
    learner_b: str
    mark: Literal["fine", "concern"]
    reviewed_at: datetime
