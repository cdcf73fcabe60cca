"""The closed lists and caps that the tables store and the wire types carry, without SQLAlchemy.

A wire type (``server.*.schemas``) names a submission's status, a role or a regrade's state; if
it took them from ``server.models``, every import of a wire type would build every table, and a
command run against a server from a laptop (``ppo-grader --server URL``, which reads wire types
and never a database) would load SQLAlchemy for nothing: about half its start-up. So they live
here, and ``server.models`` re-exports them beside the tables that store them (one definition).
"""

from __future__ import annotations

from enum import StrEnum

#: Longest reason kept with a correction, an extension or a regrade (learner-facing text, so capped).
MAX_REASON_CHARS = 500


class Status(StrEnum):
    """Closed list of submission states."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"


class Role(StrEnum):
    """Closed list of roles."""

    LEARNER = "learner"
    INSTRUCTOR = "instructor"
    ADMIN = "admin"

    @property
    def reads_everything(self) -> bool:
        """Instructors and admins may read every learner's submissions."""
        return self is not Role.LEARNER

    @property
    def submissions_limited(self) -> bool:
        """Only learners' submissions are limited (the rate limit, the cap on waiting ones):
        instructors and admins try exercises out and load fixtures."""
        return self is Role.LEARNER


class TokenScope(StrEnum):
    """Closed list of what an API token may do (``server.token_scope`` enforces it).

    ``full``: everything its owner may do (every token before 0022); ``read``: the safe methods
    only (GET, HEAD, OPTIONS), so it can change nothing, mint no token and open no web session."""

    FULL = "full"
    READ = "read"

    def covers(self, other: TokenScope) -> bool:
        """Whether a token of this scope may mint one of ``other`` (never a wider one)."""
        return self is TokenScope.FULL or other is TokenScope.READ


class RegradeState(StrEnum):
    """Closed list of a regrade set's states: ``grading`` until every result is in, then
    ``ready`` (a preview), then ``applied`` or ``cancelled`` for good."""

    GRADING = "grading"
    READY = "ready"
    APPLIED = "applied"
    CANCELLED = "cancelled"


class Keep(StrEnum):
    """Which verdict an apply keeps per submission."""

    NEW = "new"
    HIGHER = "higher"
