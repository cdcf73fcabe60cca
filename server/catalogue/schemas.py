"""Wire types for exercises. Only public facts: never a reference, case or expected value."""

from __future__ import annotations

from pydantic import BaseModel


class ExerciseSummary(BaseModel):
    """One row of ``GET /exercises``."""

    slug: str
    title: str
    function: str
    summary: str
    order: int


class CheckInfo(BaseModel):
    """A check's name and weight (what it tests, not how)."""

    name: str
    weight: float


class ExerciseDetail(BaseModel):
    """``GET /exercises/{slug}``: the statement and the learner's starter file."""

    slug: str
    title: str
    function: str
    summary: str
    description: str
    starter: str
    checks: list[CheckInfo]
