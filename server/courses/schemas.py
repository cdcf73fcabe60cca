"""Wire types for courses, exercise sets and extensions.

Times in answers are in the course's time zone (ISO 8601 with its offset); times sent
without an offset are read in the course's time zone, times with one as given.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from server.courses.policy import Phase
from server.vocabulary import MAX_REASON_CHARS


class CourseCreate(BaseModel):
    """``POST /courses``."""

    slug: str = Field(min_length=1, max_length=64, examples=["rlhf-fall-a"])
    title: str = Field(default="", max_length=200, examples=["RLHF, fall term, section A"])
    time_zone: str = Field(default="UTC", max_length=64, examples=["Europe/Paris"])


class CoursePublic(BaseModel):
    """A course and the caller's role in it."""

    slug: str
    title: str
    time_zone: str
    role: Literal["learner", "instructor"] = Field(description="The caller's role in this course.")


class SetEntryIn(BaseModel):
    """``PUT /courses/{course}/exercises/{exercise}``: publish an exercise, or change its rules."""

    release_at: datetime | None = Field(default=None, description="Not listed nor accepted before; null: open now.")
    due_at: datetime | None = Field(default=None, description="Accepted and flagged late after; null: never late.")
    close_at: datetime | None = Field(default=None, description="Refused after; null: never closed.")
    penalty_percent: float = Field(
        default=0, ge=0, le=100, description="Percent of the raw score off per started unit late; 0: only flagged."
    )
    penalty_unit: Literal["day", "hour"] = "day"
    max_attempts: int | None = Field(default=None, ge=1, le=100_000, description="Null: no limit.")
    feedback_policy: str = Field(
        default="full",
        max_length=32,
        description="What learners see of a verdict: full, score (score and check names), hidden-until-due "
        "(released at the due date; needs one) or tokens:N (N full reports a day, the others score).",
        examples=["tokens:3"],
    )
    version: str | None = Field(
        default=None,
        max_length=16,
        description="Serve this stored, verified content version; null: the exercise's current one, which must "
        "have passed verify.",
    )


class SetEntryPublic(SetEntryIn):
    """One exercise of a course's set as its staff published it (``GET /courses/{course}/sets``):
    the body a ``PUT`` of it would send, its times in the course's zone, ``version`` the pinned
    one learners are graded by (null: a built-in exercise, graded by the code the grader ships)."""

    exercise: str


class CourseSet(BaseModel):
    """``GET /courses/{course}/sets``: the course's set in catalogue order, times in its zone."""

    course: str
    time_zone: str
    entries: list[SetEntryPublic]


class RepricingPublic(BaseModel):
    """``POST /courses/{course}/exercises/{exercise}/preview``: what publishing with these rules
    would do to the submissions so far; nothing is written."""

    course: str
    exercise: str
    rewritten: int = Field(description="Submissions that would get a new lateness or penalty.")
    counted: int = Field(description="Of them, those whose score that counts would change.")


class ExerciseWindow(BaseModel):
    """One exercise of a course as the caller sees it now (their extension applied)."""

    exercise: str
    title: str
    function: str
    status: Phase = Field(description="not_released (instructors only), open, late (accepted, flagged) or closed.")
    release_at: datetime | None
    due_at: datetime | None
    close_at: datetime | None
    extended: bool = Field(description="The due date is the caller's extension.")
    seconds_to_due: int | None = Field(description="Until the due date (negative once past); null without one.")
    seconds_to_close: int | None = Field(description="Until the hard close (negative once past); null without one.")
    penalty_percent: float
    penalty_unit: str
    max_attempts: int | None
    attempts_used: int
    feedback_policy: str = Field(default="full", description="full, score, hidden-until-due or tokens:N.")
    tokens_left: int | None = Field(default=None, description="tokens:N: the caller's tokens left today on it.")
    excused: bool = Field(
        default=False, description="An instructor excused the caller from it: no late penalty applies to them."
    )


class CourseExercises(BaseModel):
    """``GET /courses/{course}/exercises``."""

    course: str
    title: str
    time_zone: str
    now: datetime = Field(description="The server's time, in the course's zone.")
    exercises: list[ExerciseWindow]


class ExtensionIn(BaseModel):
    """``PUT /courses/{course}/extensions/{user}/{exercise}``."""

    due_at: datetime = Field(description="The learner's new due date (later than the course's).")
    reason: str = Field(
        default="", max_length=MAX_REASON_CHARS, description="Why (kept with the extension and in the audit log)."
    )


class ExtensionPublic(BaseModel):
    """A granted extension."""

    course: str
    user: str
    exercise: str
    due_at: datetime
    recomputed: int = Field(
        default=0,
        description="How many of the learner's earlier submissions had their late penalty recomputed (a preview: "
        "would have).",
    )
    time_zone: str = Field(default="UTC", description="The course's time zone.")


class Unpublished(BaseModel):
    """``DELETE /courses/{course}/exercises/{exercise}``: taken out of the set (scores kept)."""

    course: str
    exercise: str


class StaffIn(BaseModel):
    """``POST /courses/{course}/staff``: who becomes staff of the course, and as what."""

    name: str = Field(min_length=1, max_length=64, description="Their login (an account is created when none has it).")
    role: Literal["ta", "instructor"] = Field(
        default="ta", description="`ta`: this course's staff only; `instructor`: also an instructor account."
    )


class StaffAddedPublic(BaseModel):
    """What ``POST /courses/{course}/staff`` did."""

    course: str
    name: str
    role: Literal["ta", "instructor"]
    token: str | None = Field(description="The new account's token, shown once (null: the account existed; a dry run).")
    created: bool = Field(description="The account was created (a dry run: would be).")
    account_raised: bool = Field(description="Their account became an instructor account (would, in a dry run).")


class StaffRemovedPublic(BaseModel):
    """What ``DELETE /courses/{course}/staff/{user}`` did (a dry run: would do)."""

    course: str
    name: str
    role: Literal["ta", "instructor"] = Field(description="What they were in the course.")


class ScoresReleasedPublic(BaseModel):
    """``POST /courses/{course}/exercises/{exercise}/release`` or ``/hold``: the exercise's
    hidden scores released now, or held again until each learner's due date."""

    course: str
    exercise: str
    held: bool = Field(description="true: held until the due date; false: released (a dry run: would be).")
    feedback_policy: str = Field(description="The exercise's feedback policy now (`full` or `hidden-until-due`).")
    submissions: int = Field(description="How many of the exercise's submissions in the course it covers.")
