"""Grades back to the LMS (Assignment and Grade Services 2.0): preview, then apply.

What is sent is the score that counts (``server.courses.counted.course_scores``: late rules,
extensions, overrides, excuses), never re-derived here, for each learner of the linked course
whom the LMS knows (an ``LtiUser`` of its platform, not dropped) and each exercise of the
course's set. One score per learner and exercise, to the exercise's line item
(``server.lti.lineitems``)::

    userId            the learner's LTI sub
    scoreGiven/Max    the score that counts, out of 100
    comment           how it counts, as every page says it (``90 (raw 100, late 1d: -10%)``)
    timestamp         when it is sent (the LMS keeps the newest)
    activityProgress  Completed          gradingProgress  FullyGraded
    submission        {"submittedAt": the time of the submission that counts}, and Canvas's
                      ``https://canvas.instructure.com/lti/submission`` {"submitted_at"}, so
                      the LMS's late flags match ours

An excused exercise is sent without ``scoreGiven`` (AGS has no "excused"; a score without a
value clears the LMS's cell, so the exercise does not count as a zero there), with the excuse
as the comment. A score sent that no longer counts at all (an override or an excuse taken back
on an exercise never attempted) is cleared the same way: a score without ``scoreGiven``,
``activityProgress: Initialized`` (the learner has not begun), ``gradingProgress:
FullyGraded`` (Canvas updates, here clears, a submission's score only with FullyGraded or
PendingManual), commented ``no score (nothing counts now)``; the preview shows the line to send. Nothing of a ``hidden-until-due`` exercise (a graded run, an override, an
excuse, their comments) is sent before the learner's due date in this course (their extension
included), whatever other courses do with the same exercise
(``server.courses.feedback_policy.held_in_course``).

No transaction is open while the LMS answers (:func:`apply`). Nothing is sent twice:
:class:`~server.models.LtiScoreSent` holds what was last sent (and
accepted) per learner and exercise, and a score goes out only when the score that counts
differs from it. So a second apply sends nothing, and a failed one is finished by the next:
what was not accepted is still different.

Two applies of a course at once (``grades apply`` at a terminal and the background job) agree
with the LMS on what it holds: every score an apply sends carries as its ``timestamp`` the
moment *before* it read what counts (:func:`apply`), so of two applies the one that read later
sends the later timestamp, which the LMS keeps (AGS: a score older than the result's last is
ignored or refused); and what was sent is recorded only over an older send (``sent_at``
compared and set in one statement). So the send recorded is always the newest-stamped one the
LMS accepted, whichever answer came last; a send a newer one overtook is not recorded, and its
refusal by the LMS is no failure. A score that changed after the later read differs from what
is recorded, and the next apply or job sends it.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from server.catalogue.service import list_exercises
from server.courses.counted import ExerciseScore, course_scores, describe
from server.courses.feedback_policy import held_in_course
from server.courses.service import LEARNER
from server.courses.sets import course_exercises
from server.db import SessionFactory, insert_unless_taken, transaction
from server.lti.errors import LmsUnreachable
from server.lti.lineitems import AGS_SCOPES, SCORE_MAXIMUM, ColumnWaiting, forget, line_item_url, remembered, usable
from server.lti.services import LmsClient
from server.models import (
    Course,
    Enrollment,
    LtiContext,
    LtiMember,
    LtiPlatform,
    LtiScoreSent,
    LtiUser,
    User,
    utcnow,
)

CANVAS_SUBMISSION = "https://canvas.instructure.com/lti/submission"
#: A failed automatic sync is retried after 30 s, then 1, 2, 4 ... minutes, at most an hour.
FIRST_RETRY_SECONDS = 30
LAST_RETRY_SECONDS = 3600


class Action:
    """What apply does with one line (display text, also the preview's column)."""

    SEND = "send"
    UP_TO_DATE = "up to date"
    HELD = "held until due"


#: What a line shows (and the LMS's comment says) when a score sent no longer counts at all.
NO_SCORE = "no score (nothing counts now)"


@dataclass(frozen=True)
class GradeLine:
    """One learner and exercise: what counts here, what was sent, what the LMS has."""

    user_id: int
    login: str
    display_name: str
    sub: str
    exercise: str
    score: ExerciseScore
    described: str
    sent: float | None
    sent_excused: bool
    was_sent: bool
    #: The LMS's result (out of 100), None when it has none, or when it could not be read.
    lms: float | None
    action: str

    @property
    def value(self) -> float | None:
        """The score that would be sent (None: excused, or :attr:`clears`)."""
        return None if self.score.excused else self.score.counted

    @property
    def clears(self) -> bool:
        """Whether nothing counts now (a correction taken back on an exercise never attempted):
        the line clears what was sent (a score without a value)."""
        return self.score.counted is None and not self.score.excused

    @property
    def submitted_at(self) -> datetime | None:
        return self.score.counting.submitted_at if self.score.counting is not None else None


@dataclass
class GradePlan:
    """Every line of a course, and whether the LMS could be read for its column."""

    link: LtiContext
    course: Course
    lines: list[GradeLine] = field(default_factory=list)
    lms_error: str | None = None
    #: Whether the LMS was asked what it has (``plan(client=...)``, or a reading given);
    #: else ``lms`` is unknown.
    lms_read: bool = False
    #: When what the LMS has was read (a comparison's reading: ``server.lti.tasks``).
    lms_read_at: datetime | None = None

    @property
    def to_send(self) -> list[GradeLine]:
        return [line for line in self.lines if line.action == Action.SEND]


def _cleared(sent: LtiScoreSent | None) -> bool:
    """Whether the LMS holds nothing of this learner and exercise from the tool: never sent,
    or cleared (a score without a value, not an excuse)."""
    return sent is None or (sent.score is None and not sent.excused)


def _nothing(user_id: int, exercise: str) -> ExerciseScore:
    """The score of an exercise never attempted, nothing corrected (nothing counts)."""
    return ExerciseScore(
        user_id=user_id,
        exercise=exercise,
        raw_best=None,
        counting=None,
        attempts=0,
        extended_to=None,
        override=None,
        excuse=None,
        counted=None,
    )


def _same(sent: LtiScoreSent | None, score: ExerciseScore) -> bool:
    if sent is None:
        return False
    if score.excused:
        return sent.excused
    if score.counted is None:
        return _cleared(sent)
    submitted = score.counting.submitted_at if score.counting is not None else None
    return (
        not sent.excused
        and sent.score is not None
        and score.counted is not None
        and abs(sent.score - score.counted) < 1e-9
        and sent.submitted_at == submitted
    )


def _learners(session: Session, link: LtiContext) -> list[tuple[User, str]]:
    """(user, sub) of the course's learners whom the LMS knows and has not dropped."""
    dropped = select(LtiMember.user_id).where(LtiMember.context_id == link.id, LtiMember.status == "dropped")
    rows = session.execute(
        select(User, LtiUser.sub)
        .join(Enrollment, Enrollment.user_id == User.id)
        .join(LtiUser, LtiUser.user_id == User.id)
        .where(
            Enrollment.course_id == link.course_id,
            Enrollment.role == LEARNER,
            LtiUser.platform_id == link.platform_id,
            User.id.not_in(dropped),
        )
        .order_by(User.name)
    ).tuples()
    return list(rows)


@dataclass(frozen=True)
class LmsReading:
    """What the LMS's gradebook held when read: (sub, exercise) -> its result out of 100
    (None: a result without a score), or why it could not be read."""

    results: dict[tuple[str, str], float | None]
    error: str | None = None
    read_at: datetime | None = None


def plan(
    session: Session,
    link: LtiContext,
    *,
    client: LmsClient | None = None,
    now: datetime | None = None,
    reading: LmsReading | None = None,
) -> GradePlan:
    """What apply would send, line by line; with ``client``, also what the LMS has now (one
    results request per exercise with a column; a failure leaves ``lms`` unknown and says why);
    with ``reading``, what it had when last read (no call)."""
    now = now or utcnow()
    course = session.get(Course, link.course_id)
    assert course is not None
    exercises = course_exercises(session, course)
    people = _learners(session, link)
    scores = course_scores(session, course, [u.id for u, _ in people], exercises)
    sent = {
        (row.user_id, row.exercise): row
        for row in session.scalars(select(LtiScoreSent).where(LtiScoreSent.context_id == link.id))
    }
    result = GradePlan(link, course)
    if client is not None:
        reading = read_lms(client, lms_columns(session, link))
    lms: dict[tuple[str, str], float | None] = {}
    if reading is not None:
        result.lms_read, result.lms_error, result.lms_read_at = True, reading.error, reading.read_at
        lms = reading.results
    for user, sub in people:
        held = held_in_course(session, course.id, user.id, now)
        for exercise in exercises:
            score = scores.get((user.id, exercise)) or _nothing(user.id, exercise)
            row = sent.get((user.id, exercise))
            if score.counted is None and not score.excused and _cleared(row):
                continue  # nothing counts, and the LMS holds nothing of ours: nothing to send
            if exercise in held:
                action = Action.HELD
            else:
                action = Action.UP_TO_DATE if _same(row, score) else Action.SEND
            result.lines.append(
                GradeLine(
                    user_id=user.id,
                    login=user.name,
                    display_name=user.display_name,
                    sub=sub,
                    exercise=exercise,
                    score=score,
                    described=NO_SCORE
                    if score.counted is None and not score.excused
                    else describe(score, course.time_zone),
                    sent=row.score if row is not None else None,
                    sent_excused=bool(row is not None and row.excused),
                    was_sent=row is not None,
                    lms=lms.get((sub, exercise)),
                    action=action,
                )
            )
    return result


def lms_columns(session: Session, link: LtiContext) -> dict[str, str]:
    """exercise -> the URL of its column, for the columns the tool knows."""
    return {exercise: row.url for exercise, row in remembered(session, link).items() if row.url and usable(row.url)}


def read_lms(client: LmsClient, columns: dict[str, str]) -> LmsReading:
    """What the LMS has in ``columns`` now (one results request per column; no database: a
    job calls it with no transaction open). A failure is the reading's ``error``."""
    read_at = utcnow()
    try:
        return LmsReading(_lms_results(client, columns), read_at=read_at)
    except LmsUnreachable as exc:
        return LmsReading({}, exc.detail, read_at)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def finite_number(value: object) -> float | None:
    """``value`` as a float when it is a JSON number a float holds finitely; None otherwise (a
    text, ``true``, an integer too large for a float such as ``10**400``, NaN, Infinity: JSON
    as Python reads it carries all of them)."""
    if not _is_number(value):
        return None
    assert isinstance(value, int | float)
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _lms_results(client: LmsClient, columns: dict[str, str]) -> dict[tuple[str, str], float | None]:
    """(sub, exercise) -> the LMS's result out of 100, for ``columns`` (None: no score there).
    A score or maximum that is a number no float holds (``10**400``, NaN, Infinity), or whose
    ratio is not finite, is the LMS's answer being broken: ``LmsUnreachable``, named."""
    found: dict[tuple[str, str], float | None] = {}
    for exercise, url in columns.items():
        for result in client.results(url, AGS_SCOPES):
            user, given, top = result.get("userId"), result.get("resultScore"), result.get("resultMaximum", 1)
            if not isinstance(user, str):
                continue
            if not (_is_number(given) and _is_number(top)):
                found[(user, exercise)] = None  # no score there (or not a number): nothing to compare
                continue
            score, maximum = finite_number(given), finite_number(top)
            value = None if score is None or maximum is None or maximum <= 0 else score * SCORE_MAXIMUM / maximum
            if score is None or maximum is None or (value is not None and not math.isfinite(value)):
                raise LmsUnreachable(
                    f"The LMS's results of {exercise[:100]} hold a score (or maximum) that is not a finite number; "
                    "its gradebook could not be read."
                )
            found[(user, exercise)] = None if value is None else round(value, 6)
    return found


def score_message(line: GradeLine, now: datetime, new_submission: bool) -> dict[str, Any]:
    """The AGS score for one line (module docstring)."""
    message: dict[str, Any] = {
        "userId": line.sub,
        "timestamp": now.isoformat(timespec="microseconds"),
        "activityProgress": "Initialized" if line.clears else "Completed",
        "gradingProgress": "FullyGraded",
        "comment": line.described[:1000],
    }
    if line.value is not None:
        message["scoreGiven"] = line.value
        message["scoreMaximum"] = SCORE_MAXIMUM
    if line.submitted_at is not None:
        at = line.submitted_at.isoformat(timespec="microseconds")
        message["submission"] = {"submittedAt": at}
        message[CANVAS_SUBMISSION] = {"submitted_at": at, "new_submission": new_submission}
    return message


@dataclass
class Applied:
    """What one apply did."""

    sent: int = 0
    held: int = 0
    up_to_date: int = 0
    #: Scores whose column is being made (a deep-linking answer's, another job's): sent by the
    #: next job (``server.lti.lineitems.ColumnWaiting``).
    waiting: int = 0
    error: str | None = None
    requests: int = 0
    #: "login / exercise: why" of each score the LMS refused (the others were still sent).
    refused: list[str] = field(default_factory=list)
    #: Scores not sent, or sent and not recorded, because another apply that read later sent
    #: its own (the module docstring: the newest read wins).
    overtaken: int = 0


class ScoreRefused(LmsUnreachable):
    """The LMS answered one score with a client error of its own (the learner is not in its
    course, say): that learner's line failed, the rest of the apply goes on."""


#: Statuses that say the LMS or the token failed, not one learner's score: the apply stops.
_WHOLE_JOB_STATUSES = frozenset({401, 403, 404, 408, 429})


@dataclass
class _Job:
    """What one apply sends, read before the LMS is called (detached rows: their fields only)."""

    link: LtiContext
    platform: LtiPlatform
    #: Each line to send, and whether its submission is new to the LMS (Canvas's flag).
    lines: list[tuple[GradeLine, bool]]
    held: int
    up_to_date: int


def _read(sessions: SessionFactory, link_id: int, now: datetime) -> _Job | None:
    with sessions() as session:  # reads only: no transaction is left open after it
        link = session.get(LtiContext, link_id)
        if link is None:
            return None
        platform = session.get(LtiPlatform, link.platform_id)
        assert platform is not None
        current = plan(session, link, now=now)
        sent = {
            (row.user_id, row.exercise): row.submitted_at
            for row in session.scalars(select(LtiScoreSent).where(LtiScoreSent.context_id == link.id))
        }
    return _Job(
        link,
        platform,
        [
            (
                line,
                (line.user_id, line.exercise) not in sent or sent[(line.user_id, line.exercise)] != line.submitted_at,
            )
            for line in current.to_send
        ],
        held=sum(line.action == Action.HELD for line in current.lines),
        up_to_date=sum(line.action == Action.UP_TO_DATE for line in current.lines),
    )


def apply(
    sessions: SessionFactory,
    link_id: int,
    secret: bytes,
    now: datetime | None = None,
    stopping: threading.Event | None = None,
) -> Applied | None:
    """Send every line whose score that counts differs from what was last sent (None: the link
    is gone). A score the LMS refuses (a 4xx for that learner: :class:`ScoreRefused`) is
    recorded and the others are still sent; any other failure (the LMS down, the token, the
    column) stops the apply, keeping what was sent before it. Failures are recorded on the
    link with a retry time.

    No transaction is held while the LMS answers (a slow LMS would hold the database's write
    lock, and every other write of the tool, for as long as it likes): what to send is read
    first, then each score is sent and, once the LMS has accepted it, recorded in a short
    transaction of its own (a column found or made likewise: ``server.lti.lineitems``). A
    crash between the two loses nothing: what was not recorded still differs, and is sent
    again by the next job (the LMS keeps the newest). ``stopping`` set (the server stopping):
    the apply ends after the score in hand, recording nothing more, and the next job goes on.

    Every score is stamped with the moment before what counts was read, and recorded only over
    an older stamp (module docstring), so two applies at once leave recorded what the LMS
    keeps; a score another apply that read later has sent (or sends, and the LMS refuses ours
    as older) is counted in ``overtaken``, not refused."""
    stamp = utcnow()  # before anything is read: every score of this apply carries it
    now = now or stamp
    job = _read(sessions, link_id, now)
    if job is None:
        return None
    titles = {x.slug: x.title for x in list_exercises()}
    outcome = Applied(held=job.held, up_to_date=job.up_to_date)
    columns: dict[str, str] = {}
    waits: set[str] = set()
    with LmsClient(sessions, secret, job.platform) as client:
        for line, new_submission in job.lines:
            if stopping is not None and stopping.is_set():
                return outcome
            if line.exercise in waits:
                outcome.waiting += 1
                continue
            try:
                recorded = _send(
                    sessions,
                    client,
                    job.link,
                    columns,
                    line,
                    titles.get(line.exercise, line.exercise),
                    new_submission,
                    stamp,
                )
            except ColumnWaiting:  # its column is being made: this exercise's scores go next time
                waits.add(line.exercise)
                outcome.waiting += 1
                continue
            except ScoreRefused as exc:  # this learner's score only: the others still go
                if _overtaken(sessions, job.link.id, line, stamp):  # refused as older than a newer apply's
                    outcome.overtaken += 1
                else:
                    outcome.refused.append(f"{line.login} / {line.exercise}: {exc.detail}")
                continue
            except LmsUnreachable as exc:  # the LMS, its token or the column: stop, retry later
                outcome.error = exc.detail
                break
            if recorded:
                outcome.sent += 1
            else:
                outcome.overtaken += 1
        outcome.requests = client.requests
    if outcome.refused and outcome.error is None:
        outcome.error = f"The LMS refused {len(outcome.refused)} score(s): " + "; ".join(outcome.refused[:5])
    with transaction(sessions) as session:
        link = session.get(LtiContext, link_id)
        if link is not None:
            _record(link, outcome.error, now, waiting=bool(outcome.waiting))
    return outcome


def _send(
    sessions: SessionFactory,
    client: LmsClient,
    link: LtiContext,
    columns: dict[str, str],
    line: GradeLine,
    title: str,
    new_submission: bool,
    stamp: datetime,
) -> bool:
    """One score: its column (``columns`` keeps those of this apply), sent with the apply's
    ``stamp``, then recorded unless a send stamped later is recorded already; returns whether
    it was recorded (False: overtaken, not sent or not recorded)."""
    if line.exercise not in columns:
        columns[line.exercise] = line_item_url(sessions, client, link, line.exercise, title)
    if _overtaken(sessions, link.id, line, stamp):
        return False  # an apply that read what counts after this one has sent its score
    try:
        client.post_score(columns[line.exercise], AGS_SCOPES, score_message(line, stamp, new_submission))
    except LmsUnreachable as exc:
        if exc.status == 404:  # the column was deleted in the LMS: look it up again next time
            gone = columns.pop(line.exercise)
            with transaction(sessions) as session:
                forget(session, link.id, line.exercise, gone)
        if exc.status is not None and 400 <= exc.status < 500 and exc.status not in _WHOLE_JOB_STATUSES:
            raise ScoreRefused(exc.detail, status=exc.status) from None
        raise
    values = {"score": line.value, "excused": line.score.excused, "submitted_at": line.submitted_at, "sent_at": stamp}
    with transaction(sessions) as session:
        key = {"context_id": link.id, "user_id": line.user_id, "exercise": line.exercise}
        if insert_unless_taken(session, LtiScoreSent, {**key, **values}) is not None:
            return True
        changed = session.execute(  # compared and set in one statement: only over an older send
            update(LtiScoreSent)
            .where(
                LtiScoreSent.context_id == link.id,
                LtiScoreSent.user_id == line.user_id,
                LtiScoreSent.exercise == line.exercise,
                LtiScoreSent.sent_at < stamp,
            )
            .values(**values)
            .execution_options(synchronize_session=False)
        )
        return bool(changed.rowcount)  # type: ignore[attr-defined]


def _overtaken(sessions: SessionFactory, link_id: int, line: GradeLine, stamp: datetime) -> bool:
    """Whether a send of this learner and exercise stamped at or after ``stamp`` (an apply that
    read what counts later) is recorded."""
    with sessions() as session:
        sent_at = session.scalar(
            select(LtiScoreSent.sent_at).where(
                LtiScoreSent.context_id == link_id,
                LtiScoreSent.user_id == line.user_id,
                LtiScoreSent.exercise == line.exercise,
            )
        )
    return sent_at is not None and sent_at >= stamp


def record_failure(link: LtiContext, error: str, now: datetime) -> None:
    """A job that failed outside the LMS calls (a bug, the database): recorded like an LMS
    failure, so it is shown and retried with the same backoff, never rerun at every poll."""
    _record(link, error, now)


def _record(link: LtiContext, error: str | None, now: datetime, waiting: bool = False) -> None:
    """The link's sync state after a job: cleared on success; on failure the error, the
    attempt count and when to retry (doubling from :data:`FIRST_RETRY_SECONDS`). Scores left
    waiting for a column: a success, and the job (a "Send" pressed included) runs again after
    :data:`FIRST_RETRY_SECONDS`."""
    if error is None and waiting:
        link.grades_synced_at = now
        link.sync_error, link.sync_failed_at, link.sync_attempts = None, None, 0
        link.next_sync_at = now + timedelta(seconds=FIRST_RETRY_SECONDS)
        return
    link.send_requested_at = None
    if error is None:
        link.grades_synced_at = now
        link.sync_error, link.sync_failed_at, link.sync_attempts, link.next_sync_at = None, None, 0, None
        return
    link.sync_attempts = (link.sync_attempts or 0) + 1
    link.sync_error = error[:500]
    link.sync_failed_at = now
    delay = min(LAST_RETRY_SECONDS, FIRST_RETRY_SECONDS * 2 ** min(link.sync_attempts - 1, 16))
    link.next_sync_at = now + timedelta(seconds=delay)
