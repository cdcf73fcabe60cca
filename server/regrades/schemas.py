"""Wire types of regrade sets (instructors only; learners read only ``RegradeNote`` on their
own submissions, server/submissions/schemas.py)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from server.vocabulary import Keep, RegradeState


class RegradeCreate(BaseModel):
    """``POST /regrades``: what to grade again."""

    exercise: str = Field(min_length=1, max_length=64, examples=["kl-penalty"])
    course: str | None = Field(
        default=None, max_length=64, description="Only this course's submissions (required unless you are an admin)."
    )
    learner: str | None = Field(default=None, max_length=64, description="Only this learner's submissions.")
    submission: int | None = Field(default=None, ge=1, le=2**31 - 1, description="Only this submission.")
    all_versions: bool = Field(default=False, description="Every counted verdict, not only stale ones.")


class RegradeApply(BaseModel):
    """``POST /regrades/{id}/apply``."""

    reason: str = Field(min_length=1, max_length=500, description="Shown to each learner whose score changes.")
    keep: Keep = Field(default=Keep.NEW, description="`new`: the regraded verdict; `higher`: the better of the two.")


class RegradePublic(BaseModel):
    """A regrade set and where it stands."""

    id: int
    exercise: str
    course: str | None
    learner: str | None
    submission: int | None
    all_versions: bool
    state: RegradeState
    graded: int
    total: int
    content_version: str
    grader_version: str
    created_at: datetime
    keep: Keep | None
    reason: str | None
    applied_at: datetime | None
    cancelled_at: datetime | None


class ChangePublic(BaseModel):
    """One submission whose verdict the regrade changes."""

    submission: int
    learner: str
    old_verdict: str | None
    old_score: float | None
    old_counted_score: float | None
    new_verdict: str | None
    new_score: float | None
    new_counted_score: float | None


class ShiftPublic(BaseModel):
    """A check or named mistake that moved: ``now_failing`` (a mistake: now named) and
    ``now_passing`` (no longer named) count submissions."""

    id: str
    now_failing: int
    now_passing: int


class LearnerShiftPublic(BaseModel):
    """A learner whose counted score on the exercise, or board rank, changes."""

    course: str
    learner: str
    old_score: float
    new_score: float
    old_rank: int
    new_rank: int


class RegradeDiff(BaseModel):
    """``GET /regrades/{id}``: the set and what applying it (with ``keep``) would change."""

    regrade: RegradePublic
    keep: Keep
    up: int
    down: int
    same: int
    failed: list[int] = Field(
        description="Submissions the regrade could not grade (internal_error); an apply leaves them."
    )
    changed: list[ChangePublic] = Field(
        description="Every submission whose verdict, score, checks or named mistakes differ."
    )
    largest: list[ChangePublic]
    checks: list[ShiftPublic]
    mistakes: list[ShiftPublic]
    learners: list[LearnerShiftPublic]
    replaced: int = Field(
        default=0, description="Verdicts an apply with `keep` replaces (replaced, for an apply's answer)."
    )


class StalePublic(BaseModel):
    """``GET /regrades/stale``: one course's one exercise, its counted verdicts and how many of
    them come from an older exercise or grader version (``ppo-grader regrade status``)."""

    course: str
    exercise: str
    verdicts: int
    stale: int
    stale_on_boards: int = Field(description="Of the stale ones, those a learner's board score comes from.")
    current_version: str = Field(description="The content version the course's set serves.")
