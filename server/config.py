"""Typed settings read from the environment (prefix ``PPO_GRADER_``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from sandbox.protocol import SandboxLimits

#: The jail's default limits (the sandbox owns them; settings only override them).
_JAIL = SandboxLimits()

# A development-only secret: good enough on a laptop, refused in production (see below).
DEFAULT_SECRET_KEY = "dev-insecure-change-me"
MIN_PRODUCTION_SECRET_LENGTH = 32


class Settings(BaseSettings):
    """Everything the server reads from its environment.

    The secret key is both the token pepper and the seed secret mixed into case seeds, so
    changing it invalidates every issued token.
    """

    model_config = SettingsConfigDict(env_prefix="PPO_GRADER_", extra="ignore", frozen=True)

    DATABASE_URL: str = "sqlite:///./data/ppo-grader.db"
    SECRET_KEY: SecretStr = SecretStr(DEFAULT_SECRET_KEY)
    ENVIRONMENT: Literal["development", "production"] = "development"
    WORKERS: int = Field(default=2, ge=1, le=64)
    QUEUE: Literal["inprocess", "procrastinate"] = "inprocess"
    # Scale-out (QUEUE=procrastinate, PostgreSQL only): worker heartbeat, how old a
    # heartbeat may get before the worker counts as dead and its job is retried elsewhere,
    # and how often each worker looks for such jobs. GPU_WORKERS=true routes the exercises
    # listed in GPU_EXERCISES (comma-separated slugs) to the `gpu` queue; all else is `cpu`.
    WORKER_HEARTBEAT_SECONDS: float = Field(default=10, gt=0)
    WORKER_STALLED_SECONDS: float = Field(default=30, gt=0)
    WORKER_REAPER_SECONDS: float = Field(default=10, gt=0)
    GPU_WORKERS: bool = False
    #: On PostgreSQL, long polls are woken by LISTEN/NOTIFY (one listening connection per API
    #: process) instead of re-reading their row every 50 ms. False behind a pooler that cannot
    #: LISTEN (PgBouncer in transaction mode); ignored on SQLite, which always polls.
    LISTEN_NOTIFY: bool = True
    GPU_EXERCISES: str = ""
    MAX_SOURCE_BYTES: int = Field(default=64 * 1024, gt=0)
    # Jail limits, passed through to the sandbox by the judge factory (server.grading.grader);
    # their defaults are the sandbox's own (sandbox.protocol.SandboxLimits), stated once there.
    CPU_SECONDS: float = Field(default=_JAIL.cpu_seconds, gt=0)
    WALL_SECONDS: float = Field(default=_JAIL.wall_seconds, gt=0)
    MEMORY_BYTES: int = Field(default=_JAIL.memory_bytes, gt=0)
    #: Largest file a learner's process may write (its stdout, results, tmp files): output_limit.
    FILE_BYTES: int = Field(default=_JAIL.output_bytes, gt=0)
    #: Captured stdout/stderr kept per stream (head and tail, with a note of what was cut).
    OUTPUT_BYTES: int = Field(default=_JAIL.captured_output_bytes, gt=0)
    # Instructor side (issue 6): submissions per learner per window ("30/minute", in-memory
    # sliding window); at most this many of a learner's submissions queued or running at once.
    # (Pseudonyms on learners' boards are per course since issue 25: courses.board_real_names.)
    #: ``GET /metrics`` (per-exercise counts and timings) wants ``Authorization: Bearer <this>``;
    #: unset, it answers loopback clients only (a Prometheus on the same host).
    METRICS_TOKEN: SecretStr | None = None
    RATE_LIMIT: str = Field(default="30/minute", pattern=r"^\s*\d+\s*/\s*(second|minute|hour|day)\s*$")
    MAX_QUEUED_PER_USER: int = Field(default=5, ge=1)
    #: Long polls (``GET /submissions/{id}?wait=S``) one user may keep waiting at once; one
    #: beyond them answers with the submission as it is after a short pause that holds no
    #: thread (review 8: one learner's 200 idle polls held the API).
    MAX_LONG_POLLS_PER_USER: int = Field(default=4, ge=1)
    #: The in-process similarity worker looks for passed due dates and runs queued by
    #: another process this often (issue 27; procrastinate workers look every 5 minutes).
    SIMILARITY_POLL_SECONDS: float = Field(default=30, gt=0)
    #: How often the in-process queue looks for regrade results queued by another process
    #: (``ppo-grader regrade preview``); regrades never take more than WORKERS - 1 workers.
    REGRADE_POLL_SECONDS: float = Field(default=2, gt=0)
    #: Child processes one similarity run compares exercises in (1: in the worker's own thread;
    #: more only where the worker has idle cores: docs/benchmarks.md).
    SIMILARITY_PROCESSES: int = Field(default=1, ge=1, le=64)
    #: How often the in-process LTI thread sends the grades that changed of courses in automatic
    #: mode, and those an instructor asked to send (issue 35; procrastinate workers: every minute).
    LTI_POLL_SECONDS: float = Field(default=15, gt=0)
    #: How long an LMS's key set (JWKS), cached at a launch, verifies launches before it is
    #: fetched again (6 hours; a minute to a week): a key the LMS took out of its set (a leaked
    #: one, rotated away) stops verifying within this long (``server.lti.platforms``).
    LTI_JWKS_MAX_AGE_SECONDS: float = Field(default=6 * 3600, ge=60, le=7 * 86400)
    #: The tool's public address (``https://grader.example.edu``): what ``/lti/config.json``
    #: names. Unset, that page answers 404 and says to set it (it never copies a request's
    #: Host header, which anyone sending the request chooses).
    #: On SIGTERM (``serve``): long polls answer 503 ``ShuttingDown`` at once; the other requests
    #: in flight and the jobs in hand get this long, from the signal, to finish; a job still
    #: grading then goes back to the queue (graded at the next start). The process exits a
    #: second or two after (issue 38).
    SHUTDOWN_GRACE_SECONDS: float = Field(default=3, ge=0, le=300)
    PUBLIC_URL: str | None = Field(default=None, pattern=r"^https?://[A-Za-z0-9.\-\[\]:]+(/[A-Za-z0-9._~/-]*)?$")

    @model_validator(mode="after")
    def _refuse_weak_secret_in_production(self) -> Settings:
        secret = self.SECRET_KEY.get_secret_value()
        if self.ENVIRONMENT == "production" and (
            secret == DEFAULT_SECRET_KEY or len(secret) < MIN_PRODUCTION_SECRET_LENGTH
        ):
            raise ValueError(
                "PPO_GRADER_SECRET_KEY must be set to a random value of at least "
                f"{MIN_PRODUCTION_SECRET_LENGTH} characters when ENVIRONMENT=production "
                '(e.g. python -c "import secrets; print(secrets.token_urlsafe(48))")'
            )
        return self

    @property
    def secret_bytes(self) -> bytes:
        """The secret key as bytes, for HMAC peppers and seed mixing."""
        return self.SECRET_KEY.get_secret_value().encode()
