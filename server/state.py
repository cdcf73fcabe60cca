"""What the app's lifespan builds and the dependencies hand to routes."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Engine

from server.clock import Clock, system_clock
from server.config import Settings
from server.db import SessionFactory
from server.grading.queue import SubmissionQueue
from server.grading.worker import WorkerPool
from server.lti.jobs import LtiGradeSync
from server.similarity.jobs import SimilarityQueue
from server.submissions.waiting import VerdictAnnouncer, VerdictListener


@dataclass
class AppState:
    """Per-app runtime objects (never module globals, so tests can build many apps)."""

    settings: Settings
    engine: Engine
    session_factory: SessionFactory
    queue: SubmissionQueue
    workers: WorkerPool
    #: Wakes long-polling readers when an in-process worker stores a verdict.
    announcer: VerdictAnnouncer = field(default_factory=VerdictAnnouncer)
    #: On PostgreSQL: turns other processes' NOTIFYs into announcements; None: waiters poll.
    listener: VerdictListener | None = None
    #: What "now" is for release, due and close rules (tests inject their own).
    clock: Clock = system_clock
    #: Where similarity runs go (the in-process worker, or procrastinate); None: not started.
    similarity: SimilarityQueue | None = None
    #: The in-process LTI grades thread (None on procrastinate, whose workers run the jobs).
    lti: LtiGradeSync | None = None
