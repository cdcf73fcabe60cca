"""Wire types for submissions, separate from the tables.

The public types have no field for the source, expected values or hidden case data, so
they cannot leak by accident.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from exercises.report import Verdict
from server.openapi import RenamedFields, old_name
from server.vocabulary import Status


class SubmissionCreate(BaseModel):
    """``POST /submissions`` body."""

    exercise: str = Field(min_length=1, max_length=64, examples=["actor-loss"])
    source: str = Field(description="The learner's Python file, UTF-8 text (a leading byte-order mark is dropped).")
    course: str | None = Field(
        default=None,
        max_length=64,
        description="Course slug; may be left out when the learner is in one course only.",
    )
    filename: str | None = Field(
        default=None,
        max_length=255,
        description="The submitted file's name (its base name is kept), shown in tracebacks.",
        examples=["gae.py"],
    )


class CheckPublic(RenamedFields):
    """One check's outcome as the learner sees it."""

    renamed: ClassVar[Mapping[str, str]] = {"misconception": "mistake_title"}

    name: str
    weight: float
    passed: bool
    message: str
    mistake_title: str | None = Field(description="The title of the mistake named on this failed check.")
    misconception: str | None = old_name("mistake_title")
    check_id: str | None = Field(
        default=None, description="The check's stable id, `<exercise>/<check>`.", examples=["an-exercise/a-check"]
    )
    mistake_id: str | None = Field(
        default=None,
        description="The named mistake's stable id, `<exercise>/<mistake>`.",
        examples=["an-exercise/a-named-mistake"],
    )


class Location(BaseModel):
    """A place in the learner's file; columns are 1-based, ``end_column`` exclusive."""

    file: str
    line: int
    column: int
    end_column: int
    function: str | None = None
    source: str = Field(description="The source line, as in the file.")


class RootCause(BaseModel):
    """One exception of the learner's (same type, same frame) and the checks it failed."""

    exception: str = Field(examples=["NameError"])
    message: str
    location: Location | None
    traceback: str = Field(description="The learner's frames only, in the submitted file's name.")
    phase: str = Field(description="syntax, import, call or backward.")
    calls: int = Field(description="Calls that raised it (0 for syntax and import).")
    total_calls: int = Field(description="Calls that did not raise another exception.")
    checks: list[str] = Field(description="Names of the failed checks it explains.")
    checks_line: str = Field(
        default="",
        description="Those checks in one short line.",
        examples=["11 of 12 checks, all but ValueError on mismatched shapes"],
    )
    headline: str = Field(examples=["Your function raised NameError on every call (11 checks)"])


class Mistake(RenamedFields):
    """A mistake the judge named, with what to do about it."""

    renamed: ClassVar[Mapping[str, str]] = {"misconception": "mistake_id"}

    mistake_id: str = Field(
        description=(
            "The mistake's stable id, `<exercise>/<mistake>` (`<exercise>/unexplained` when no known mistake fits; "
            "its title in a report stored before mistakes had ids)."
        ),
        examples=["an-exercise/a-named-mistake"],
    )
    misconception: str | None = old_name("mistake_id")
    title: str
    fix: str | None
    checks: list[str]


class CheckDetail(BaseModel):
    """A failed check in one short text (no traceback, no seed), and what explains it."""

    check: str
    text: str
    cause: int | None = Field(default=None, description="1-based index into root_causes, if one explains it.")


class FeedbackSummary(BaseModel):
    """What a learner reads first."""

    verdict: str
    score: float | None
    checks_passed: int
    checks_total: int
    headline: str
    next_step: str | None
    details: list[CheckDetail]


class Feedback(BaseModel):
    """The verdict's feedback as data; every renderer (CLI, web pages) lays out this."""

    root_causes: list[RootCause]
    diagnosis: list[Mistake]
    summary: FeedbackSummary


class LateFields(BaseModel):
    """Where a submission stands against its course's due date."""

    course: str = Field(description="Slug of the course it was submitted to.")
    late: bool = Field(description="Submitted after the learner's due date (extension included).")
    late_seconds: int | None = Field(description="Seconds past the due date; null when on time.")
    penalty_percent: float = Field(description="Percent of the raw score the late policy takes off.")
    counted_score: float | None = Field(
        description="The score that counts on boards and in the gradebook: `score` less the penalty."
    )


class RegradeNote(BaseModel):
    """An applied regrade that replaced this submission's verdict, and the instructor's reason."""

    regrade: int = Field(description="The regrade set's id.")
    applied_at: datetime | None
    reason: str
    old_verdict: Verdict | None
    old_score: float | None
    old_counted_score: float | None
    new_verdict: Verdict | None
    new_score: float | None
    new_counted_score: float | None
    old_content_version: str
    old_grader_version: str


class Regraded(BaseModel):
    """Applied regrades of a submission, oldest first (empty when none)."""

    regrades: list[RegradeNote] = Field(
        default_factory=list, description="Applied regrades that changed this verdict, oldest first, with their reason."
    )


class FeedbackFields(BaseModel):
    """How much of the verdict the caller sees, by the exercise set's feedback policy
    (``server.courses.feedback_policy``; instructors always see everything)."""

    feedback_view: Literal["full", "report", "score", "hidden"] = Field(
        default="full",
        description="full: everything; report: the report less what your code printed or raised on the "
        "judge's inputs; score: verdict, score and check names only; hidden: received and graded, "
        "released at `released_at`.",
    )
    feedback_policy: str = Field(
        default="full",
        description="The set's policy: full, score, hidden-until-due or tokens:N.",
        examples=["tokens:3"],
    )
    released_at: datetime | None = Field(default=None, description="hidden-until-due: when the verdict is released.")
    token_spent: bool = Field(default=False, description="tokens:N: a token was spent on this submission.")
    tokens_left: int | None = Field(default=None, description="tokens:N: tokens you have left today on this exercise.")


class SubmissionPublic(LateFields, FeedbackFields, Regraded):
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
    estimated_seconds: int | None = Field(
        default=None,
        description="While queued: seconds until the verdict at the queue's measured rate (verdicts "
        "stored in the last 5 minutes), for the submissions ahead and this one; null when there is "
        "no recent measurement, and unless status is queued.",
        examples=[12],
    )
    filename: str | None = Field(default=None, description="The submitted file's base name, when sent.")
    feedback: Feedback | None = Field(
        default=None, description="Root causes, diagnosis and summary; null until done (and for older rows)."
    )
    content_version: str = Field(
        default="unknown",
        description="The exercise's content version that produced the verdict; "
        "`unknown` for verdicts older than versions (and until done).",
        examples=["3f2a9c01d4be"],
    )
    grader_version: str = Field(
        default="unknown",
        description="The grader's (judge, harness, jail) version that produced the verdict.",
        examples=["a81c07e5f3d2"],
    )


class SubmissionSummary(LateFields, FeedbackFields, Regraded):
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
