"""What the app's lifespan builds and the dependencies hand to routes.

``AppState`` names its runtime parts by what the routes ask of them, as protocols: the queue
(``grading.queue.SubmissionQueue``), the grading workers (:class:`Workers`), the similarity
queue (``similarity.service.SimilarityQueue``) and the background threads
(:class:`Background`). The concrete ones (the in-process pool or procrastinate's, the
similarity and LTI threads, the verdict listener) are built by ``server.app`` alone, so
importing this module, or ``server.deps`` which every route imports, loads no worker
(``tests/server/test_import_graph.py`` holds it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from sqlalchemy import Engine

from server.clock import Clock, system_clock
from server.config import Settings
from server.db import SessionFactory
from server.grading.queue import SubmissionQueue
from server.similarity.service import SimilarityQueue
from server.submissions.waiting import VerdictAnnouncer


class Workers(Protocol):
    """The grading workers as the API sees them: this process's pool, or procrastinate's processes."""

    @property
    def alive(self) -> int:
        """How many are running (threads, or worker processes with a fresh heartbeat)."""

    def stop(self, timeout: float) -> None:
        """Finish the jobs in hand (waiting up to ``timeout`` seconds), then stop."""


class Background(Protocol):
    """A thread the lifespan started and stops at shutdown (the verdict listener, LTI grades)."""

    def stop(self, timeout: float = 10.0) -> None:
        """Stop, waiting up to ``timeout`` seconds."""


@dataclass
class AppState:
    """Per-app runtime objects (never module globals, so tests can build many apps)."""

    settings: Settings
    engine: Engine
    session_factory: SessionFactory
    queue: SubmissionQueue
    workers: Workers
    #: Wakes long-polling readers when an in-process worker stores a verdict.
    announcer: VerdictAnnouncer = field(default_factory=VerdictAnnouncer)
    #: On PostgreSQL: turns other processes' NOTIFYs into announcements; None: waiters poll.
    listener: Background | None = None
    #: What "now" is for release, due and close rules (tests inject their own).
    clock: Clock = system_clock
    #: Where similarity runs go (the in-process worker, or procrastinate); None: not started.
    similarity: SimilarityQueue | None = None
    #: The in-process LTI grades thread (None on procrastinate, whose workers run the jobs).
    lti: Background | None = None
    #: Set when the server is told to stop (``app.begin_shutdown``, monotonic clock): when the
    #: jobs in hand stop being waited for.
    shutdown_deadline: float | None = None
