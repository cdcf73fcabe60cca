"""Wire types for the leaderboards."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class LeaderboardEntry(BaseModel):
    """One learner's row. ``learner`` is what the caller may see: real name for
    instructors, display name or pseudonym for learners; ``name`` (the login) is null for
    learners."""

    rank: int = Field(description="1-based position in the stable order.")
    learner: str
    name: str | None = Field(description="Login name; instructors only.")
    is_you: bool
    board_score: float = Field(
        description="The board score, what boards rank by: the score that counts, after any late penalty, of the "
        "checks the judge confirmed (self-reported checks left out, see docs/security.md), so it can be below the "
        "score that counts (`counted_score` in the scores API and gradebooks); an override as given. Overall: the "
        "sum over exercises. An excused exercise adds nothing, and an excused learner is not on its board."
    )
    raw_best_score: float = Field(description="Best raw score, before late penalties (overall: the sum).")
    attempts: int = Field(description="Finished submissions, internal errors excluded.")
    solved: int = Field(description="Exercises with a board score of 100 (every confirmed check passed).")
    best_reached_at: datetime | None = Field(
        description="When the board score was first reached (overall: when the last per-exercise one was)."
    )


class LeaderboardPage(BaseModel):
    """One page of a board, ordered by board score desc, reached-at asc, then a tie-break."""

    course: str = Field(description="The course whose board this is.")
    exercise: str | None
    total: int = Field(description="Learners on the board, all pages.")
    limit: int
    offset: int
    entries: list[LeaderboardEntry]


class SpeedEntry(BaseModel):
    """A learner who scored 100, by their fastest full-score submission."""

    rank: int
    learner: str
    name: str | None
    is_you: bool
    submission_id: int | None = Field(description="Instructors only.")
    cpu_seconds: float | None
    peak_memory_bytes: int | None
    submitted_at: datetime


class SpeedPage(BaseModel):
    """Learners with a 100, ordered by cpu seconds, then peak memory, then time, then id."""

    exercise: str
    total: int
    limit: int
    offset: int
    entries: list[SpeedEntry]
