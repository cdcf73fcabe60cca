"""Errors the API may answer with, all on one wire shape: ``{"error": Name, "detail": text}``.

Tree::

    GraderError (status_code, error_name, detail)
    ├── NotAuthenticated          401  missing, unknown or revoked token
    ├── NotAllowed                403  an authenticated user lacking the role for an action
    ├── OutsideTokenScope         403  beyond the token's scope: a read-only token's write, a course-limited token elsewhere
    ├── SubmissionsClosed         403  past the exercise's hard close (the date is in detail)
    ├── AttemptLimitReached       403  the learner used every attempt the course allows
    ├── ScoresHidden              403  a board of a hidden-until-due exercise before every due date has passed
    ├── NoTokensLeft              403  every feedback token of today is spent (when the next comes is in detail)
    ├── ExerciseNotFound          404
    ├── UserNotFound              404
    ├── CourseNotFound            404  also what a non-member gets for a course
    ├── SubmissionNotFound        404  also what a learner gets for someone else's submission
    ├── RegradeNotFound           404  also what a learner or another course's instructor gets
    ├── TokenNotFound             404  no live token of the user with this prefix
    ├── ReviewNotFound            404  no review request by this id in the course (or not the caller's to answer)
    ├── UserAlreadyExists         409
    ├── CourseAlreadyExists       409
    ├── ExerciseNotVerified       409  a pack exercise without a passed verify at its content version
    ├── IdempotencyKeyConflict    409  same key reused with a different exercise or source
    ├── LateNotConfirmed          409  past the due date, sent with ``late=ask``: nothing stored; the window is in the body
    ├── CatalogueChanged          409  the exercise was matched from a catalogue version that is not the caller's now
    ├── RegradeNotReady           409  a regrade set still grading cannot be applied yet
    ├── RegradeClosed             409  a regrade set already applied or cancelled (never twice)
    ├── TokensNotInUse            409  a token spent on a submission whose set's feedback policy takes none
    ├── ReviewAlreadyOpen         409  a review request of this submission is open already (or its cap is reached)
    ├── TokenPrefixAmbiguous      409  two live tokens of one user share a listed prefix (revoke them all instead)
    ├── SourceTooLarge            413
    ├── EmptySource               422
    ├── InvalidSource             422  NUL bytes or text that is not valid UTF-8
    ├── InvalidRoster             422  a roster CSV without a ``name`` column, or not UTF-8
    ├── InvalidExport             422  a gradebook asked for in a format that does not exist
    ├── InvalidBulkFile           422  a bulk-action CSV too long, not UTF-8, or without its columns (413: too large)
    ├── InvalidCourse             422  a bad course slug or time zone, dates out of order, ...
    ├── CourseRequired            422  the learner is in several courses and named none
    ├── InvalidReview             422  an empty or too long comment, answer or message; a line the source lacks
    ├── NothingToRegrade          422  no stored verdict matches a regrade's selection
    ├── RateLimited               429  too many submissions in the window (Retry-After)
    ├── TooManyQueued             429  too many of the learner's submissions waiting (Retry-After)
    └── ShuttingDown              503  the server is stopping: a long poll ends early; ask again (Retry-After)

Framework errors are mapped by ``server.app`` onto the same shape: ``ValidationError`` (422),
``NotFound``/``MethodNotAllowed``/... for Starlette's HTTP errors, ``InternalError`` (500).
"""

from __future__ import annotations

from typing import Any


class GraderError(Exception):
    """Base for every error whose ``detail`` is safe to show to the caller."""

    status_code: int = 500
    error_name: str = "InternalError"

    def __init__(
        self,
        detail: str,
        *,
        status_code: int | None = None,
        error_name: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        if status_code is not None:
            self.status_code = status_code
        # Default the wire name to the class name so subclasses need no boilerplate.
        self.error_name = error_name or type(self).__name__
        self.headers = headers

    def to_wire(self) -> dict[str, Any]:
        """The JSON body sent to clients."""
        return {"error": self.error_name, "detail": self.detail}


class NotAuthenticated(GraderError):
    """No token, or a token that is unknown or revoked."""

    status_code = 401

    def __init__(self, detail: str = "A valid API token is required (Authorization: Bearer <token>).") -> None:
        super().__init__(detail, headers={"WWW-Authenticate": "Bearer"})


class NotAllowed(GraderError):
    """The caller is authenticated but lacks the role this action needs."""

    status_code = 403


class OutsideTokenScope(GraderError):
    """The request reaches beyond the API token's scope (``server.token_scope``): a write with a
    read-only token, or another course (or every course) with a course-limited one. The detail
    names the token's scope and course."""

    status_code = 403


class ExerciseNotFound(GraderError):
    """No exercise has this slug."""

    status_code = 404


class SubmissionNotFound(GraderError):
    """No submission with this id that the caller may read."""

    status_code = 404


class UserAlreadyExists(GraderError):
    """A user with this name exists already."""

    status_code = 409


class IdempotencyKeyConflict(GraderError):
    """An idempotency key was reused for a different submission body."""

    status_code = 409


class SourceTooLarge(GraderError):
    """The source (or the raw request body) is over the configured limit."""

    status_code = 413


class EmptySource(GraderError):
    """The source is empty or only whitespace."""

    status_code = 422


class InvalidSource(GraderError):
    """The source contains NUL bytes or is not valid UTF-8."""

    status_code = 422


class UserNotFound(GraderError):
    """No user has this name (or the caller may not manage them)."""

    status_code = 404


class TokenNotFound(GraderError):
    """No live token of the user has this prefix."""

    status_code = 404


class TokenPrefixAmbiguous(GraderError):
    """More than one live token of the user has this prefix (astronomically rare: revoke them all)."""

    status_code = 409


class InvalidRoster(GraderError):
    """A roster CSV that cannot be read."""

    status_code = 422


class InvalidBulkFile(GraderError):
    """A bulk-action CSV (extensions and corrections) that cannot be read as a whole."""

    status_code = 422


class InvalidExport(GraderError):
    """A gradebook asked for in a format (or a Canvas login column) that does not exist."""

    status_code = 422


class _TooMany(GraderError):
    status_code = 429

    def __init__(self, detail: str, retry_after: int) -> None:
        super().__init__(detail, headers={"Retry-After": str(max(1, retry_after))})
        self.retry_after = max(1, retry_after)


class RateLimited(_TooMany):
    """More submissions in the rate-limit window than the setting allows."""


class TooManyQueued(_TooMany):
    """Too many of this learner's submissions are queued or running."""


class SubmissionsClosed(GraderError):
    """The exercise's hard close has passed for this learner."""

    status_code = 403


class AttemptLimitReached(GraderError):
    """The learner has used every attempt the course allows on this exercise."""

    status_code = 403


class CourseNotFound(GraderError):
    """No course with this slug that the caller belongs to."""

    status_code = 404


class CourseAlreadyExists(GraderError):
    """A course with this slug exists already."""

    status_code = 409


class ExerciseNotVerified(GraderError):
    """A pack's exercise has not passed ``exercises verify`` at its current content version."""

    status_code = 409


class LateNotConfirmed(GraderError):
    """A submission past its due date, sent with ``late=ask`` (``ppo-submit``: ask before sending
    it late): nothing is stored. The body carries the course and the exercise's window as
    ``GET /courses/{course}/exercises`` lists it, so the client can say what lateness costs and
    ask; sent again with ``late=send``, it is accepted and flagged late."""

    status_code = 409

    def __init__(self, detail: str, course: str, window: dict[str, Any]) -> None:
        super().__init__(detail)
        self.course = course
        self.window = window

    def to_wire(self) -> dict[str, Any]:
        return {**super().to_wire(), "course": self.course, "window": self.window}


class CatalogueChanged(GraderError):
    """The client matched its file to an exercise in a catalogue (``catalogue=`` the version it
    read, the ``ETag`` of ``GET /exercises``) that is not the caller's catalogue now: nothing is
    stored; read the catalogue again and send again."""

    status_code = 409


class InvalidCourse(GraderError):
    """A course, exercise set entry or extension that cannot be stored as given."""

    status_code = 422


class CourseRequired(GraderError):
    """A learner in several courses must say which one a submission is for."""

    status_code = 422


class RegradeNotFound(GraderError):
    """No regrade set with this id that the caller may read."""

    status_code = 404


class RegradeNotReady(GraderError):
    """The set's results are not all graded yet."""

    status_code = 409


class NoTokensLeft(GraderError):
    """Every feedback token of today is spent on this exercise; the detail says when the next comes."""

    status_code = 403


class TokensNotInUse(GraderError):
    """A token asked for on a submission whose exercise set's feedback policy is not ``tokens:N``."""

    status_code = 409


class RegradeClosed(GraderError):
    """The set was applied or cancelled already; a set is applied at most once."""

    status_code = 409


class NothingToRegrade(GraderError):
    """A regrade's selection matches no stored verdict."""

    status_code = 422


class ReviewNotFound(GraderError):
    """No review request by this id that the caller may answer."""

    status_code = 404


class ReviewAlreadyOpen(GraderError):
    """The submission has an open review request already, or has used every request it may have."""

    status_code = 409


class InvalidReview(GraderError):
    """A comment, answer or request message that is empty or too long, or a line the source lacks."""

    status_code = 422


class ScoresHidden(GraderError):
    """A learner asked for the board of a ``hidden-until-due`` exercise before its scores are released."""

    status_code = 403


class ShuttingDown(GraderError):
    """The server is stopping (SIGTERM) while a long poll waits: nothing is lost (the
    submission stays queued and is graded after the restart); ask again after ``Retry-After``."""

    status_code = 503

    def __init__(self, retry_after: int = 1) -> None:
        super().__init__(
            "The grader is restarting; your submission is kept and graded after the restart. Ask again.",
            headers={"Retry-After": str(max(1, retry_after)), "Connection": "close"},
        )
