"""Long polling: ``GET /submissions/{id}?wait=S`` answers as soon as the verdict is stored.

A waiting request subscribes to its submission's announcements *before* it reads the row, so
a verdict stored between the read and the wait still wakes it. Announcements come from:

* in-process workers (the embedded default), which call :meth:`VerdictAnnouncer.announce`
  after each stored verdict;
* on PostgreSQL, every process that stores a verdict (``ppo-grader worker`` included): the
  verdict's transaction sends ``NOTIFY`` on ``CHANNEL`` (``grading.persistence.notify_verdict``,
  delivered at commit), and each API process's :class:`VerdictListener` turns it into an
  announcement.

While a listener is connected the announcer is *pushed*: waiters sleep until they are woken
or their time is up, and the database sees one read per wake-up instead of one every
:data:`POLL_SECONDS`. With in-process workers (the embedded default, SQLite included) the
announcer is *local*: this process's own verdicts wake their waiters, and a waiter re-reads its
row only every :data:`RECHECK_SECONDS`, for a verdict another process stored. With neither
(``ppo-grader worker`` processes and no listener) waiters re-read their row every
:data:`POLL_SECONDS`: one primary-key lookup on the server instead of a client round trip per
poll. When a listener connects or loses its connection it wakes every waiter, so none sleeps
through a verdict whose ``NOTIFY`` was lost. A waiting request holds no database connection and
no thread: only its re-reads do, each for one lookup.

One user keeps at most ``MAX_LONG_POLLS_PER_USER`` (a setting, 4) long polls waiting at once
(:meth:`VerdictAnnouncer.slot`); a ``GET`` beyond them reads the row once, and when it is not
done pauses :data:`OVER_CAP_PAUSE_SECONDS` (no thread, no re-read; a verdict wakes it) before it
answers with the row as it is; a ``POST`` beyond them answers at once (it is rate-limited). Without
the cap, one learner's 200 idle polls on an unfinished submission re-read their rows every 50 ms
and held the thread pool and the database pool: another learner's verdict was not answered
(review 8). Answered at once instead of after the pause, the 196 polls beyond the cap became a
flood of requests as fast as the API could answer them: another learner's verdict took 44 s
instead of 0.4 s in a CI run at load 5.

When the server stops (SIGTERM), :meth:`VerdictAnnouncer.close` wakes every waiter at once, and
any that subscribes later does not sleep at all: each long poll ends with 503 ``ShuttingDown``
(the client asks again after the restart) instead of holding the shutdown up to
:data:`MAX_WAIT_SECONDS` (issue 38).

The HTML pages wait their own way: they poll :func:`change_mark` and reload when it moves.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.grading.persistence import CHANNEL
from server.models import Status, Submission

log = logging.getLogger(__name__)

#: How often a waiting request re-reads its row when no announcement can be relied on.
POLL_SECONDS = 0.05
#: How often a waiting request re-reads its row when this process's verdicts are announced but
#: another process (an admin command, a second server on the same database) might store one.
RECHECK_SECONDS = 1.0
#: The longest wait a request may ask for.
MAX_WAIT_SECONDS = 30.0
#: How long a ``GET`` long poll beyond its user's cap waits, without a thread or a re-read,
#: before it answers with the row as it is (woken at once by a verdict of this process).
OVER_CAP_PAUSE_SECONDS = 5.0

#: How long a listener waits before connecting again after losing its connection.
RECONNECT_SECONDS = 1.0
#: How often a listener's thread looks up from ``notifies()`` to see whether it must stop.
_STOP_CHECK_SECONDS = 0.5

_Entry = tuple[asyncio.AbstractEventLoop, asyncio.Event]


class Subscription:
    """One request's interest in one submission's verdict (see ``VerdictAnnouncer.subscribe``)."""

    def __init__(self, announcer: VerdictAnnouncer, entry: _Entry) -> None:
        self._announcer = announcer
        self._event = entry[1]

    async def pause(self, seconds: float) -> None:
        """Sleep ``seconds``, or until announced or the announcer closes, whatever the
        announcer's kind: the caller re-reads once afterwards, not every recheck."""
        if self._announcer.closed:
            return
        try:
            await asyncio.wait_for(self._event.wait(), seconds)
        except TimeoutError:
            pass
        finally:
            self._event.clear()

    async def wait(self, timeout: float) -> bool:
        """Sleep until announced, or ``timeout`` seconds (at most :data:`RECHECK_SECONDS` when
        the announcer is only local, :data:`POLL_SECONDS` when it is neither local nor pushed);
        True when an announcement came. Clears it, so the same subscription can wait again after
        a re-read. Returns at once once the announcer is closed (the caller checks ``closed``)."""
        if self._announcer.closed:
            return True
        if not self._announcer.pushed:
            timeout = min(timeout, RECHECK_SECONDS if self._announcer.local else POLL_SECONDS)
        try:
            await asyncio.wait_for(self._event.wait(), timeout)
            return True
        except TimeoutError:
            return False
        finally:
            self._event.clear()


class VerdictAnnouncer:
    """Wakes requests waiting for a submission's verdict. Thread-safe: workers and the listener
    announce from their own threads, requests wait on the app's event loop."""

    def __init__(self, *, local: bool = False) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[int, set[_Entry]] = defaultdict(set)
        self._slots: dict[int, int] = defaultdict(int)
        self._pushed = False
        self._closed = False
        #: True when this process's workers announce every verdict they store.
        self.local = local

    @contextmanager
    def slot(self, user_id: int, most: int) -> Iterator[bool]:
        """One of ``user_id``'s ``most`` waiting places, for as long as the block runs: True
        when one was free (the request may wait), False when all are taken (the request
        answers at once)."""
        with self._lock:
            taken = self._slots[user_id] < most
            if taken:
                self._slots[user_id] += 1
        try:
            yield taken
        finally:
            if taken:
                with self._lock:
                    self._slots[user_id] -= 1
                    if not self._slots[user_id]:
                        del self._slots[user_id]

    @property
    def closed(self) -> bool:
        """True once the server is stopping: waiters must answer now, not wait."""
        return self._closed

    def close(self) -> None:
        """The server is stopping: wake every waiter now; later waits return at once."""
        self._closed = True
        self._wake(lambda: [entry for entries in self._waiting.values() for entry in entries])

    @property
    def pushed(self) -> bool:
        """True while every stored verdict is announced here (a connected listener)."""
        return self._pushed

    def set_pushed(self, pushed: bool) -> None:
        """A listener connected (True) or lost its connection (False): wake every waiter, to
        re-read its row now and then wait the new way."""
        self._pushed = pushed
        self._wake(lambda: [entry for entries in self._waiting.values() for entry in entries])

    def announce(self, submission_id: int) -> None:
        """A verdict for ``submission_id`` is committed: wake whoever waits for it."""
        self._wake(lambda: list(self._waiting.get(submission_id, ())))

    def _wake(self, select: Callable[[], list[_Entry]]) -> None:
        with self._lock:
            waiters = select()
        for loop, event in waiters:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # that loop has closed: nobody is waiting on it any more
                pass

    @contextmanager
    def subscribe(self, submission_id: int) -> Iterator[Subscription]:
        """Be woken by announcements for ``submission_id`` for as long as the block runs. Enter
        it before reading the row: an announcement after the read is then never missed."""
        entry = (asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            self._waiting[submission_id].add(entry)
        try:
            yield Subscription(self, entry)
        finally:
            with self._lock:
                waiters = self._waiting.get(submission_id)
                if waiters is not None:
                    waiters.discard(entry)
                    if not waiters:
                        del self._waiting[submission_id]

    def waiting(self) -> int:
        """How many requests wait now (for tests and metrics)."""
        with self._lock:
            return sum(len(w) for w in self._waiting.values())


class VerdictListener:
    """``LISTEN`` on ``CHANNEL`` in a thread of its own and announce each verdict.

    One connection per API process, whatever the number of waiters. Reconnects after
    :data:`RECONNECT_SECONDS` when the connection is lost; the announcer polls meanwhile.
    """

    def __init__(self, conninfo: str, announcer: VerdictAnnouncer) -> None:
        self._conninfo = conninfo
        self._announcer = announcer
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="verdict-listener", daemon=True)

    def start(self) -> None:
        """Start listening (returns at once; ``announcer.pushed`` turns True once connected)."""
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop listening and close the connection."""
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        import psycopg

        while not self._stop.is_set():
            try:
                with psycopg.connect(self._conninfo, autocommit=True, connect_timeout=5) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self._announcer.set_pushed(True)
                    while not self._stop.is_set():
                        for notice in conn.notifies(timeout=_STOP_CHECK_SECONDS):
                            self._deliver(notice.payload)
            except psycopg.Error as exc:
                log.warning("verdict listener lost its connection; long polls poll meanwhile: %s", exc)
            finally:
                self._announcer.set_pushed(False)
            self._stop.wait(RECONNECT_SECONDS)

    def _deliver(self, payload: str) -> None:
        # Anyone who can connect to the database can NOTIFY this channel: a payload is only a
        # hint to re-read a row, and one that is not an id is dropped.
        if payload.isascii() and payload.isdigit() and len(payload) <= 19:
            self._announcer.announce(int(payload))


def change_mark(session: Session, user_id: int | None) -> str:
    """A short string that changes whenever a submission is added or a verdict arrives: the
    whole server's (``user_id`` None, for instructors) or one user's. Pages poll it and
    reload when it moves.

    It is the newest id (moves when a row is added) and the number of unfinished rows
    (drops when one finishes; claiming or re-queueing does not change it), so both parts
    come from indexes (the primary key, ``(status, id)``, ``(user_id, status)``) without
    reading the finished rows, however many there are.
    """
    where = [] if user_id is None else [Submission.user_id == user_id]
    newest = select(func.max(Submission.id)).where(*where).scalar_subquery()
    unfinished = (
        select(func.count())
        .select_from(Submission)
        .where(*where, Submission.status.in_([Status.QUEUED.value, Status.RUNNING.value]))
        .scalar_subquery()
    )
    top, waiting = session.execute(select(newest, unfinished)).one()  # one round trip
    return f"{int(top or 0)}.{int(waiting or 0)}"
