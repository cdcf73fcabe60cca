"""Wire types of human review: comments on a submission's lines, review requests, answers.

Input caps are the models' (``server.models.review``), so a huge body is a 422 before any
service runs; the service checks them again for the pages' forms, which are not JSON.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from server.models.correction import MAX_REASON_CHARS
from server.models.review import MAX_ANSWER_CHARS, MAX_COMMENT_CHARS, MAX_REQUEST_CHARS

#: The largest line number a request may name (a source is far shorter; this only bounds the integer).
MAX_LINE = 1_000_000


class CommentIn(BaseModel):
    """A staff comment on one line (from 1) of a submission's stored source."""

    line: int = Field(ge=1, le=MAX_LINE, description="Line of the stored source, from 1.")
    body: str = Field(min_length=1, max_length=MAX_COMMENT_CHARS, description="What the learner reads.")


class RequestIn(BaseModel):
    """A learner's request for a review of their submission."""

    message: str = Field(min_length=1, max_length=MAX_REQUEST_CHARS, description="What the staff should look at.")


class AnswerIn(BaseModel):
    """The staff's answer to a review request, which resolves it; with ``score``, an override
    of the score that counts (``PUT /courses/{course}/scores/.../override``'s rule) as well."""

    answer: str = Field(min_length=1, max_length=MAX_ANSWER_CHARS, description="What the learner reads.")
    score: float | None = Field(
        default=None, description="A new score that counts, 0-100 (an override); none: no correction."
    )
    reason: str | None = Field(
        default=None,
        max_length=MAX_REASON_CHARS,
        description="The override's reason (the learner reads it beside the score); none: the answer, if short enough.",
    )


class CommentPublic(BaseModel):
    """One staff comment on one line."""

    id: int
    submission: int
    line: int
    #: The line of the stored source the comment is on, as it reads there (the learner's own code).
    source_line: str = ""
    body: str
    author: str
    created_at: datetime


class RequestPublic(BaseModel):
    """One review request and, once resolved, its answer."""

    id: int
    submission: int
    course: str
    learner: str
    exercise: str
    message: str
    state: str
    created_at: datetime
    answer: str | None = None
    answered_by: str | None = None
    answered_at: datetime | None = None
    #: The override the answer made (None: resolved without one, or not resolved).
    override_score: float | None = None


class SubmissionReview(BaseModel):
    """What the caller sees of a submission's human review."""

    submission: int
    #: True while the set's feedback policy holds the review back from its learner (a
    #: ``hidden-until-due`` exercise before their due date): no comment and no answer is shown.
    held: bool = False
    released_at: datetime | None = None
    comments: list[CommentPublic] = []
    requests: list[RequestPublic] = []


class CourseRequests(BaseModel):
    """A course's review requests, for its staff."""

    course: str
    state: str
    requests: list[RequestPublic]
