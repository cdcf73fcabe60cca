"""What a learner sees of a verdict: the exercise set's feedback policy, in one place.

Every route that shows a submission (the API's detail, list, long poll and token routes, the
CLI through them, the dashboard's learner pages) asks :func:`access_for` how the viewer may
see it and passes the record through :func:`visible_report`; boards ask
:func:`hidden_board_exercises`. Nothing else decides, so no route can show more than another.

Policies (``set_entries.feedback_policy``, set with ``ppo-grader sets publish --feedback``;
each submission keeps the policy and due date it was last given, so that an exercise taken out
of its set hides what it hid: :func:`stated_for`):

``full``
    Everything, as before policies existed (the default, and the default course's), but the
    timings only staff see (:data:`STAFF_ONLY_TIMINGS`: the probe visit's and diagnosis's).
``score``
    The verdict, the score (raw and counted) and each check's name, points and pass/fail:
    no messages (no expected/got, no inputs), no named mistakes, no captured output, no
    timings, CPU or memory, times to the minute.
``hidden-until-due``
    Received and graded, but nothing of the verdict is shown until the learner's due date
    (their extension included), no time but the sending's; then the report, cut as below. Needs a due date. Boards leave
    the exercise out until every learner's due date has passed.
``tokens:N``
    ``score``, except for submissions the learner spends a token on (``POST
    /submissions/{id}/token``, ``ppo-submit token ID``): those show the report, cut as below.
    N tokens per learner per exercise per calendar day in the course's time zone; a token is
    spent only when asked for (never by viewing), once per submission, and never comes back.

Under every policy but ``full`` the report is cut of what the learner's own code wrote while
it ran on the judge's inputs, so that it cannot print them: its exception messages (the
message and the last line of a traceback, at import and in calls, in check messages too), the
values its calls returned, how many elements differ and where the worst is (its code picks
them), the names its module defined, its captured stdout and stderr, timings, CPU and memory
(``server.courses.feedback_cut``). A crash is never told by its exit code or signal, which
the code picks too (``sandbox.verdicts``). Exception type names are kept
when they are Python's own. What each view shows is an allow-list (:data:`ALLOWED`);
docs/security.md says what each can still leak.

A policy hides scores and check details, never that the code did not run: a verdict that says
no check was reached (the file did not parse or import, named no exercise function, or its run
hit a limit or crashed first: :data:`UNCHECKED_VERDICTS`) is shown under every view, its message and
feedback cut as the report view cuts them (the syntax error's line and caret stay).

Instructors of the submission's course (and admins) always see everything (:data:`EVERYTHING`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import Enum, StrEnum
from typing import Any, TypeVar

from pydantic import BaseModel
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from exercises.report import WITHHELD
from server.courses.feedback_cut import cut_check_message, cut_feedback, cut_message
from server.courses.policy import learner_due
from server.courses.service import course_time, teaches_course, zone
from server.courses.source_facts import SourceFacts
from server.errors import InvalidCourse, NoTokensLeft, ScoresHidden, SubmissionNotFound, TokensNotInUse
from server.models import (
    BestScore,
    Course,
    Extension,
    FeedbackToken,
    SetEntry,
    Submission,
    User,
    Verdict,
    aware_utc,
)
from server.submissions.schemas import Feedback
from server.users.service import lock_learner

#: The most tokens a day a set may give (a larger N is ``full`` in all but name).
MAX_TOKENS = 100

#: What a ``score`` view says instead of the verdict's message.
SCORE_NOTE = "This exercise shows the score and the check names only (feedback policy: {policy})."
#: What a ``hidden`` view says instead of the verdict's message.
HIDDEN_NOTE = "Received and graded; the score and feedback are released on {when}."


class PolicyKind(StrEnum):
    """The closed list of feedback policies."""

    FULL = "full"
    SCORE = "score"
    HIDDEN_UNTIL_DUE = "hidden-until-due"
    TOKENS = "tokens"


@dataclass(frozen=True)
class FeedbackPolicy:
    """One set's policy; ``tokens`` is N for ``tokens:N`` (0 otherwise)."""

    kind: PolicyKind
    tokens: int = 0

    @classmethod
    def parse(cls, text: str) -> FeedbackPolicy:
        """``full``, ``score``, ``hidden-until-due`` or ``tokens:N`` (1 <= N <= 100); anything
        else raises ``InvalidCourse`` naming the accepted spellings."""
        name, _, count = text.strip().partition(":")
        accepted = "full, score, hidden-until-due or tokens:N (N from 1 to 100)"
        if name == PolicyKind.TOKENS and count.isdigit() and 1 <= int(count) <= MAX_TOKENS:
            return cls(PolicyKind.TOKENS, int(count))
        if not count and name in {k.value for k in PolicyKind if k is not PolicyKind.TOKENS}:
            return cls(PolicyKind(name))
        raise InvalidCourse(f"A feedback policy is {accepted}, not {text[:40]!r}.")

    def __str__(self) -> str:
        return f"tokens:{self.tokens}" if self.kind is PolicyKind.TOKENS else self.kind.value

    def tokens_left(self, spent_today: int) -> int:
        """Tokens a learner has left today, having spent ``spent_today`` (0 under a policy
        without tokens): the one place that subtraction is made."""
        return max(0, self.tokens - spent_today)


FULL = FeedbackPolicy(PolicyKind.FULL)


class View(StrEnum):
    """How much of one verdict one viewer sees (``feedback_view`` on the wire)."""

    FULL = "full"  # everything stored
    REPORT = "report"  # the report, less what the learner's code wrote on the judge's inputs
    SCORE = "score"  # verdict, score, check names and pass/fail
    HIDDEN = "hidden"  # received and graded; nothing of the verdict until released_at


@dataclass(frozen=True)
class Access:
    """How one viewer sees one submission, and why (the policy, a release date, a token)."""

    view: View
    policy: FeedbackPolicy = FULL
    released_at: datetime | None = None
    token_spent: bool = False
    #: ``tokens:N`` only: tokens the learner has left today on this exercise.
    tokens_left: int | None = None
    #: The course, for dates in its zone in the notes.
    course: Course | None = None
    #: The stored source (report view, or a verdict every view shows: :data:`UNCHECKED_VERDICTS`):
    #: what a cut traceback and location are built from.
    source: SourceFacts | None = None
    #: The viewer is the course's staff (an instructor, an admin): :data:`STAFF_ONLY_TIMINGS` too.
    staff: bool = False


#: What staff see: everything stored.
EVERYTHING = Access(View.FULL, staff=True)
#: What a learner sees of their own submission under ``full``: everything stored but the
#: staff-only timings.
LEARNER_FULL = Access(View.FULL)

#: Timings no learner view shows, ``full`` included (staff see them): the probe visit's duration,
#: which the learner's file sets from the hidden diagnostic probe inputs (round 12), and the
#: diagnosis's, which depends on what the file did in the probe visit.
STAFF_ONLY_TIMINGS = frozenset({"probe_visit", "diagnosis"})


def view_of(policy: FeedbackPolicy, *, now: datetime, due_at: datetime | None, token_spent: bool) -> View:
    """The view a learner has of their own submission under ``policy`` at ``now``; ``due_at``
    is their due date (extension included)."""
    if policy.kind is PolicyKind.FULL:
        return View.FULL
    if policy.kind is PolicyKind.SCORE:
        return View.SCORE
    if policy.kind is PolicyKind.TOKENS:
        return View.REPORT if token_spent else View.SCORE
    # hidden-until-due: released at the due date itself (a set without one is refused at publish)
    return View.HIDDEN if due_at is None or now < due_at else View.REPORT


# --- the one function every route calls ------------------------------------------------------

R = TypeVar("R")

#: Fields of a submission record (``SubmissionPublic``, ``SubmissionSummary``, a page's
#: ``SubmissionLine``) every view shows as stored: who, what, when it was sent, how the
#: policy applies. Nothing the judge measured or said.
_ALWAYS = frozenset(
    {
        "id",
        "exercise",
        "user",
        "user_name",
        "display_name",
        "status",
        "created_at",
        "course",
        "queue_position",
        "estimated_seconds",
        "filename",
        "content_version",
        "grader_version",
        "late",
        "late_seconds",
        "penalty_percent",
    }
)
#: Per view, the fields shown as stored; the view's own rewrites (below) come on top, and
#: every other field is blanked, so a field added to a record later is hidden until listed.
ALLOWED: dict[View, frozenset[str]] = {
    View.SCORE: _ALWAYS | {"verdict", "score", "counted_score", "regrades"},
    View.REPORT: _ALWAYS | {"verdict", "score", "counted_score", "regrades"},
    View.HIDDEN: _ALWAYS,
}
#: What the policy's own fields are set to: part of every view.
_POLICY_FIELDS = ("feedback_view", "feedback_policy", "released_at", "token_spent", "tokens_left")

#: Verdicts that say the code never reached a check: it did not parse, did not import, named no
#: exercise function, or its run ended by a limit or a crash before any result came back (the
#: judge's ``_failed``: no check ran). A policy hides scores and check details, never that: every
#: view shows these verdicts, with the report view's cut of their message and feedback (the
#: syntax error's line and caret, the import error's type and line), so a learner is not told
#: "received and graded" about a file that never ran (issue 34).
UNCHECKED_VERDICTS = frozenset(
    {
        Verdict.SYNTAX_ERROR,
        Verdict.RUNTIME_ERROR,
        Verdict.MISSING_FUNCTION,
        Verdict.TIME_LIMIT,
        Verdict.MEMORY_LIMIT,
        Verdict.OUTPUT_LIMIT,
        Verdict.CRASHED,
    }
)
#: The judge-decided fields a shown outcome adds to the ``hidden`` and ``score`` views: the
#: verdict and its score (0: no check ran); the message and feedback come cut (below).
_OUTCOME_FIELDS = frozenset({"verdict", "score", "counted_score"})


def shows_outcome(view: View, verdict: str | None) -> bool:
    """Whether ``view`` shows the verdict's message and feedback although it hides a report's:
    the verdict says the code never reached a check (:data:`UNCHECKED_VERDICTS`)."""
    return view in (View.HIDDEN, View.SCORE) and verdict in UNCHECKED_VERDICTS


def _minute(moment: datetime | None) -> datetime | None:
    """A time to the minute: a learner reads when their run finished, not how long it took
    (a run time to the microsecond is a channel for what the inputs are, review 4)."""
    return None if moment is None else moment.replace(second=0, microsecond=0)


def visible_report(report: R, access: Access) -> R:
    """``report`` (a ``SubmissionPublic``, a ``SubmissionSummary`` or a page's submission line)
    as ``access`` allows, with ``feedback_view`` (and the policy, release date, token) set where
    it has those fields. Pure: the same record and access always give the same answer.

    Visibility is an allow-list (:data:`ALLOWED`): under every view but ``full`` a field is
    shown as stored only when the view lists it, rewritten when the view says how (messages
    cut, checks without their messages, times to the minute), and blanked otherwise. A learner's
    ``full`` view is everything stored but :data:`STAFF_ONLY_TIMINGS`."""
    changes: dict[str, Any] = {
        "feedback_view": access.view.value,
        "feedback_policy": str(access.policy),
        "released_at": access.released_at,
        "token_spent": access.token_spent,
        "tokens_left": access.tokens_left,
    }
    if access.view is View.FULL:
        timings = _get(report, "timings")
        if not access.staff and isinstance(timings, dict):
            changes["timings"] = {k: v for k, v in timings.items() if k not in STAFF_ONLY_TIMINGS}
        return _replace(report, **changes)
    view = access.view
    verdict = _get(report, "verdict")
    if view is View.HIDDEN and verdict == Verdict.INTERNAL_ERROR:
        # the grader's own failure is said: it tells the learner to send again, nothing of their code
        view = View.REPORT
    if view is View.HIDDEN:
        when = (
            course_time(access.released_at, access.course) if access.released_at and access.course else "the due date"
        )
        # no time at all (started, finished, timings): a run time is a channel for the inputs,
        # and a time limit or a crash would show in it; no regrade note (old and new scores)
        changes.update(message=HIDDEN_NOTE.format(when=when), checks=[])
    elif view is View.SCORE:
        changes.update(
            message=SCORE_NOTE.format(policy=access.policy),
            checks=[_score_check(c) for c in _get(report, "checks") or []],
            started_at=_minute(_get(report, "started_at")),
            finished_at=_minute(_get(report, "finished_at")),
        )
    else:
        changes.update(
            _cut_texts(report, access, verdict),
            checks=[_replace(c, message=cut_check_message(c.message)) for c in _get(report, "checks") or []],
            started_at=_minute(_get(report, "started_at")),
            finished_at=_minute(_get(report, "finished_at")),
        )
    allowed = ALLOWED[view]
    if shows_outcome(view, verdict):
        # the code never reached a check: say so, as the report says it (no check, nothing else)
        changes.update(_cut_texts(report, access, verdict))
        allowed = allowed | _OUTCOME_FIELDS
    for name in _field_names(report):
        if name not in allowed and name not in changes:
            changes[name] = _blank(getattr(report, name))
    return _replace(report, **changes)


def _cut_texts(report: Any, access: Access, verdict: str | None) -> dict[str, Any]:
    """The verdict's message and feedback as the report view shows them: cut of what the
    learner's code wrote on the judge's inputs (``server.courses.feedback_cut``), the headline
    made from the cut message."""
    feedback = _get(report, "feedback")
    cut = cut_feedback(feedback, access.source) if isinstance(feedback, Feedback) else None
    message = cut_message(verdict, _get(report, "message") or "", cut)
    if cut is not None:
        cut.summary.headline = message.split("\n", 1)[0]
    return {"message": message, "feedback": cut}


def _score_check(check: Any) -> Any:
    """A check as a score-only view shows it: name, points, pass/fail; of its message only the
    judge's own "Not counted yet: ..." (a passed check whose points wait for the core values,
    which names only the exercise's core checks), so it does not read as a failure."""
    kept = check.message if not check.passed and check.message.startswith(WITHHELD) else ""
    return _replace(check, message=kept, mistake_title=None, mistake_id=None, self_reported="")


def _blank(value: Any) -> Any:
    """The empty value of a field's kind (a list stays a list, a text a text; a verdict, a
    number or a time: None)."""
    if isinstance(value, Enum):
        return None
    for kind in (str, list, dict, bool):
        if isinstance(value, kind):
            return kind()
    return None


def _field_names(record: Any) -> list[str]:
    if isinstance(record, BaseModel):
        return list(type(record).model_fields)
    assert dataclasses.is_dataclass(record) and not isinstance(record, type)
    return [f.name for f in dataclasses.fields(record)]


def _get(record: Any, name: str) -> Any:
    return getattr(record, name, None)


def _replace(record: R, **changes: Any) -> R:
    """``record`` with those of ``changes`` it has a field for."""
    if isinstance(record, BaseModel):
        known = {k: v for k, v in changes.items() if k in type(record).model_fields}
        return record.model_copy(update=known)
    assert dataclasses.is_dataclass(record) and not isinstance(record, type)
    names = {f.name for f in dataclasses.fields(record)}
    return dataclasses.replace(record, **{k: v for k, v in changes.items() if k in names})


# --- reading the policy from the database ------------------------------------------------------


def policy_of(entry: SetEntry | None) -> FeedbackPolicy:
    """A set entry's policy (no entry: the default course's open exercises, ``full``)."""
    return FeedbackPolicy.parse(entry.feedback_policy) if entry is not None else FULL


@dataclass(frozen=True)
class Stated:
    """What a course's set says of one exercise's feedback: the policy and the due date before
    any extension (``hidden-until-due`` releases at each learner's own due date)."""

    policy: FeedbackPolicy
    due_at: datetime | None


def stated_for(session: Session, submission: Submission) -> Stated:
    """The policy and due date ``submission`` is under: its set entry's while the entry exists;
    once it is gone (unpublished), the last ones the set gave it, stored on the row when it was
    accepted and at every publish (``Submission.feedback_policy``). So visibility never depends
    on the set still existing: taking an exercise out of a set shows nothing more. No entry
    ever (the default course's open exercises): ``full``."""
    entry = session.get(SetEntry, (submission.course_id, submission.exercise))
    if entry is not None:
        return Stated(policy_of(entry), entry.due_at)
    if submission.feedback_policy is None:
        return Stated(FULL, None)
    return Stated(FeedbackPolicy.parse(submission.feedback_policy), submission.feedback_due_at)


def exercise_policy(session: Session, course_id: int, exercise: str) -> FeedbackPolicy:
    """The policy of one exercise of a course: its set entry's, or, for an exercise taken out
    of the set, the one its submissions were last under (``full`` when none says one)."""
    entry = session.get(SetEntry, (course_id, exercise))
    if entry is not None:
        return policy_of(entry)
    stored = session.scalar(
        select(Submission.feedback_policy)
        .where(
            Submission.course_id == course_id,
            Submission.exercise == exercise,
            Submission.feedback_policy.is_not(None),
        )
        .limit(1)  # every row of one exercise of one course says the same (publish writes them all)
    )
    return FeedbackPolicy.parse(stored) if stored is not None else FULL


def _hidden_until_due(session: Session, course_id: int) -> dict[str, datetime | None]:
    """The ``hidden-until-due`` exercises of one course and their set's due dates (before
    extensions): those of its set, and those taken out of it whose submissions were under that
    policy (the latest due date they were given). An exercise out of the set is looked for
    among those with board rows (``best_scores``, one per learner and exercise: what a board
    reads anyway); each costs one index seek on the submissions."""
    hidden: dict[str, datetime | None] = {
        entry.exercise: entry.due_at
        for entry in session.scalars(
            select(SetEntry).where(
                SetEntry.course_id == course_id, SetEntry.feedback_policy == PolicyKind.HIDDEN_UNTIL_DUE.value
            )
        )
    }
    known = select(BestScore.exercise).where(BestScore.course_id == course_id).distinct().subquery()
    latest = (
        select(func.max(Submission.feedback_due_at))
        .where(
            Submission.course_id == course_id,
            Submission.exercise == known.c.exercise,
            Submission.feedback_policy == PolicyKind.HIDDEN_UNTIL_DUE.value,
        )
        .scalar_subquery()
    )
    in_set = select(SetEntry.exercise).where(SetEntry.course_id == course_id)
    for exercise, due in session.execute(select(known.c.exercise, latest).where(known.c.exercise.not_in(in_set))):
        if due is not None:  # hidden-until-due always has a due date (publish refuses one without)
            hidden[exercise] = aware_utc(due)
    return hidden


def _due_for(session: Session, course_id: int, exercise: str, due_at: datetime | None, user_id: int) -> datetime | None:
    """The learner's due date: the set's (``due_at``), or their extension when later (``learner_due``)."""
    extension = session.get(Extension, (course_id, user_id, exercise))
    return learner_due(due_at, extension.due_at if extension is not None else None)


def day_window(now: datetime, course: Course) -> tuple[datetime, datetime]:
    """The calendar day of ``now`` in the course's zone, as [start, end) instants."""
    start = now.astimezone(zone(course.time_zone)).replace(hour=0, minute=0, second=0, microsecond=0)
    end = start + timedelta(days=1)  # wall-clock arithmetic: the next midnight, however long the day
    return start.astimezone(UTC), end.astimezone(UTC)


def tokens_spent_today(session: Session, course: Course, user_id: int, exercise: str, now: datetime) -> int:
    """Tokens the learner spent on this exercise of this course during today (course's zone)."""
    start, end = day_window(now, course)
    return (
        session.scalar(
            select(func.count())
            .select_from(FeedbackToken)
            .where(
                FeedbackToken.course_id == course.id,
                FeedbackToken.user_id == user_id,
                FeedbackToken.exercise == exercise,
                FeedbackToken.spent_at >= start,
                FeedbackToken.spent_at < end,
            )
        )
        or 0
    )


@dataclass
class AccessMemo:
    """What :func:`access_for` reads once per page rather than once per row, for one viewer:
    whether they teach each course; each (course, exercise)'s policy (``stated_for``), course and
    their due date; tokens they spent today; and, when :meth:`with_tokens` filled it, which of the page's
    submissions have a token spent on them (None: looked up per submission)."""

    teaches: dict[int, bool] = field(default_factory=dict)
    #: (course, exercise, the row's stored policy and due date): the policy, course and due date.
    sets: dict[tuple[int, str, str | None, datetime | None], tuple[FeedbackPolicy, Course | None, datetime | None]] = (
        field(default_factory=dict)
    )
    spent: dict[tuple[int, str], int] = field(default_factory=dict)
    tokened: set[int] | None = None

    def with_tokens(self, session: Session, submission_ids: Iterable[int]) -> AccessMemo:
        """This memo knowing, in one query, which of ``submission_ids`` have a token spent on them."""
        ids = list(submission_ids)
        found = session.scalars(select(FeedbackToken.submission_id).where(FeedbackToken.submission_id.in_(ids)))
        self.tokened = set(found) if ids else set()
        return self


def access_for(
    session: Session,
    viewer: User,
    submission: Submission,
    now: datetime,
    *,
    teaches: bool | None = None,
    memo: AccessMemo | None = None,
) -> Access:
    """How ``viewer`` (who may read ``submission``) sees it at ``now``. ``teaches``: whether the
    viewer teaches its course, when the caller knows already; ``memo``: what a page of rows reads
    once (:class:`AccessMemo`), filled as it goes."""
    memo = memo if memo is not None else AccessMemo()
    if teaches is None:
        if submission.course_id not in memo.teaches:
            memo.teaches[submission.course_id] = teaches_course(session, viewer, submission.course_id)
        teaches = memo.teaches[submission.course_id]
    if submission.user_id != viewer.id or teaches:
        return EVERYTHING  # only the course's instructors and admins read others' submissions
    key = (submission.course_id, submission.exercise, submission.feedback_policy, submission.feedback_due_at)
    if key not in memo.sets:
        stated = stated_for(session, submission)
        if stated.policy.kind is PolicyKind.FULL:
            memo.sets[key] = (stated.policy, None, None)
        else:
            course = session.get(Course, submission.course_id)
            due = _due_for(session, submission.course_id, submission.exercise, stated.due_at, viewer.id)
            memo.sets[key] = (stated.policy, course, due)
    policy, course, due = memo.sets[key]
    if policy.kind is PolicyKind.FULL:
        return LEARNER_FULL
    token_spent = policy.kind is PolicyKind.TOKENS and (
        submission.id in memo.tokened
        if memo.tokened is not None
        else session.get(FeedbackToken, submission.id) is not None
    )
    left = None
    if policy.kind is PolicyKind.TOKENS and course is not None:
        today = (submission.course_id, submission.exercise)
        if today not in memo.spent:
            memo.spent[today] = tokens_spent_today(session, course, viewer.id, submission.exercise, now)
        left = policy.tokens_left(memo.spent[today])
    view = view_of(policy, now=now, due_at=due, token_spent=token_spent)
    released = due if policy.kind is PolicyKind.HIDDEN_UNTIL_DUE else None
    reported = view is View.REPORT or shows_outcome(view, submission.verdict)
    facts = SourceFacts(submission.source, submission.filename) if reported else None
    return Access(view, policy, released, token_spent, left, course, facts)


def refuse_hidden_board(session: Session, viewer: User, course: Course, exercise: str, now: datetime) -> None:
    """Raise ``ScoresHidden`` when ``exercise``'s board must not be shown to ``viewer`` now."""
    if exercise in hidden_board_exercises(session, viewer, course, now):
        raise ScoresHidden(
            f"The scores of {exercise!r} in {course.slug!r} are hidden until every learner's due date "
            "has passed (feedback policy hidden-until-due)."
        )


def hidden_board_exercises(session: Session, viewer: User, course: Course, now: datetime) -> set[str]:
    """Exercises of ``course`` whose scores boards must not show ``viewer`` now: for a learner,
    the ``hidden-until-due`` ones (in the set, or taken out of it) until every learner's due
    date (extensions too) has passed."""
    if teaches_course(session, viewer, course.id):
        return set()
    hidden = set()
    for exercise, due_at in _hidden_until_due(session, course.id).items():
        latest = session.scalar(
            select(func.max(Extension.due_at)).where(Extension.course_id == course.id, Extension.exercise == exercise)
        )
        last_due = learner_due(aware_utc(due_at), aware_utc(latest))  # the last learner's due date
        if last_due is None or now < last_due:
            hidden.add(exercise)
    return hidden


def hidden_own_exercises(session: Session, learner: User, now: datetime, course: Course) -> set[str]:
    """Exercises of ``course`` whose best score a learner's own page must not show now: those
    :func:`held_in_course` holds for them (``hidden-until-due`` there, in the set or taken out of
    it, and their own due date not passed yet), unless they teach the course. Per course: the
    same exercise hidden in another course says nothing here."""
    # nothing filters on their enrolments or submissions: an instructor's override is a score of
    # an exercise never submitted (review 4, finding 11), and hiding what is not there costs nothing
    return set() if teaches_course(session, learner, course.id) else held_in_course(session, course.id, learner.id, now)


def held_in_course(session: Session, course_id: int, learner_id: int, now: datetime) -> set[str]:
    """Exercises of one course whose score must not leave the tool yet for this learner (the
    LMS gradebook): ``hidden-until-due`` in that course (in its set, or taken out of it), and
    the learner's due date there (their extension included) not passed. Whatever made the
    score (a submission, an override, an excuse): nothing of it is released before the due
    date. Other courses do not matter."""
    held = set()
    for exercise, due_at in _hidden_until_due(session, course_id).items():
        due = _due_for(session, course_id, exercise, due_at, learner_id)
        if due is None or now < aware_utc(due):
            held.add(exercise)
    return held


# --- spending a token ------------------------------------------------------------------------


def spend_token(session: Session, user: User, submission: Submission, now: datetime) -> None:
    """Spend one of today's tokens on the learner's own ``submission`` (a ``tokens:N`` set),
    so that its report is shown from now on; spending twice on one submission costs one. The
    caller commits. Counted under the learner's lock, so a burst cannot overspend."""
    if submission.user_id != user.id:
        raise SubmissionNotFound(f"No submission {submission.id} of yours.")
    policy = stated_for(session, submission).policy
    course = session.get(Course, submission.course_id)
    if policy.kind is not PolicyKind.TOKENS or course is None:
        raise TokensNotInUse(f"{submission.exercise!r} shows feedback by its policy ({policy}); it takes no tokens.")
    lock_learner(session, user.id)
    if session.get(FeedbackToken, submission.id) is not None:
        return
    if policy.tokens_left(tokens_spent_today(session, course, user.id, submission.exercise, now)) == 0:
        _, end = day_window(now, course)
        session.rollback()  # release the learner's lock before the refusal is written
        raise NoTokensLeft(
            f"You have spent all {policy.tokens} tokens of today on {submission.exercise!r} in {course.slug!r}; "
            f"the next comes on {course_time(end, course)}."
        )
    session.add(
        FeedbackToken(
            submission_id=submission.id,
            course_id=course.id,
            user_id=user.id,
            exercise=submission.exercise,
            spent_at=now,
        )
    )
    session.flush()
