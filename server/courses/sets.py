"""Exercise sets: publishing an exercise in a course with its dates and late policy,
extensions, the acceptance check a submission passes, and what a learner's listing shows.

The date rules themselves are pure (``server.courses.policy``); this module reads them from
the database and turns a refusal into an error that names the date in the course's zone.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from server.catalogue.schemas import ExerciseSummary
from server.catalogue.service import catalogue_index, find_exercise, list_exercises
from server.catalogue.verification import require_verified
from server.catalogue.versions import pin
from server.courses import audit, policy
from server.courses.best_scores import backfill_best_scores
from server.courses.counted import submission_board, submission_counted, uses_an_attempt
from server.courses.feedback_policy import FeedbackPolicy, PolicyKind
from server.courses.policy import Phase, Rules
from server.courses.schemas import CourseSet, SetEntryPublic
from server.courses.service import INSTRUCTOR, LEARNER, course_role, course_time, courses_of, local
from server.errors import (
    AttemptLimitReached,
    ExerciseNotFound,
    InvalidCourse,
    SubmissionsClosed,
    UserNotFound,
)
from server.models import DEFAULT_COURSE_ID, AuditAction, Course, Extension, SetEntry, Submission, User, Verdict, utcnow
from server.text_guard import is_storable_text
from server.vocabulary import MAX_REASON_CHARS

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Repricing:
    """What putting a set's submissions under new rules does (or would do): ``rewritten``
    submissions get a new lateness or penalty; ``counted`` of them, graded, a new counted score."""

    rewritten: int = 0
    counted: int = 0


@dataclass(frozen=True)
class Published:
    """A set entry as published, and how its submissions so far were re-priced."""

    entry: SetEntry
    repriced: Repricing


def _checked(
    session: Session,
    course: Course,
    exercise: str,
    *,
    release_at: datetime | None,
    due_at: datetime | None,
    close_at: datetime | None,
    penalty_percent: float,
    penalty_unit: str,
    max_attempts: int | None,
    feedback_policy: str,
    version: str | None,
) -> tuple[SetEntry, FeedbackPolicy]:
    """Every refusal :func:`publish` makes, before it changes anything; the entry (new ones
    not yet added to the session) with its version pinned, and the parsed policy."""
    found = find_exercise(exercise)
    if version is None:
        require_verified(session, found)
    policy = FeedbackPolicy.parse(feedback_policy)
    if policy.kind is PolicyKind.HIDDEN_UNTIL_DUE and due_at is None:
        raise InvalidCourse("The feedback policy hidden-until-due releases scores at the due date: give a due date.")
    dates = [(n, d) for n, d in (("release", release_at), ("due", due_at), ("close", close_at)) if d is not None]
    for (first, a), (second, b) in itertools.pairwise(dates):
        if b < a:
            raise InvalidCourse(
                f"The {second} date ({course_time(b, course)}) is before the {first} date ({course_time(a, course)})."
            )
    if penalty_unit not in ("day", "hour"):
        raise InvalidCourse(f"A late penalty is per 'day' or per 'hour', not {penalty_unit!r}.")
    if not 0 <= penalty_percent <= 100:
        raise InvalidCourse("The late penalty is a percent of the score per day or hour, between 0 and 100.")
    if max_attempts is not None and max_attempts < 1:
        raise InvalidCourse("An attempt limit is at least 1 (leave it out for no limit).")
    entry = session.get(SetEntry, (course.id, exercise)) or SetEntry(course_id=course.id, exercise=exercise)
    return entry, policy


def publish(
    session: Session,
    course: Course,
    exercise: str,
    *,
    release_at: datetime | None = None,
    due_at: datetime | None = None,
    close_at: datetime | None = None,
    penalty_percent: float = 0.0,
    penalty_unit: str = "day",
    max_attempts: int | None = None,
    feedback_policy: str = "full",
    version: str | None = None,
    actor: str = "unknown",
) -> Published:
    """Publish ``exercise`` in ``course`` (or replace its dates and policies). The caller commits.

    A pack's exercise must have passed ``exercises verify`` at its current content version
    (:func:`server.catalogue.verification.require_verified`). ``feedback_policy``: ``full``,
    ``score``, ``hidden-until-due`` (needs a due date) or ``tokens:N``
    (``server.courses.feedback_policy``).

    The set is pinned to a stored, verified version (issue 32): ``version`` if given, else the
    exercise's current one; learners are graded by it until the set is published again.

    The learners' submissions so far are re-priced under the new due date and late rule
    (:func:`reprice_set`, which :func:`preview` runs without writing). ``actor`` (who did it:
    a login, or the CLI's ``cli:<os user>``) goes to the log line and the audit log's event
    (``server.courses.audit``) that record the change."""
    existed = session.get(SetEntry, (course.id, exercise)) is not None
    entry, policy = _checked(
        session,
        course,
        exercise,
        release_at=release_at,
        due_at=due_at,
        close_at=close_at,
        penalty_percent=penalty_percent,
        penalty_unit=penalty_unit,
        max_attempts=max_attempts,
        feedback_policy=feedback_policy,
        version=version,
    )
    pin(session, entry, find_exercise(exercise), version)
    entry.release_at, entry.due_at, entry.close_at = release_at, due_at, close_at
    entry.penalty_percent, entry.penalty_unit, entry.max_attempts = float(penalty_percent), penalty_unit, max_attempts
    entry.feedback_policy = str(policy)
    session.add(entry)
    # the submissions made so far are under the new policy and due date too: what they keep
    # should the entry be deleted (server.courses.feedback_policy.stated_for)
    session.execute(
        update(Submission)
        .where(Submission.course_id == course.id, Submission.exercise == exercise)
        .values(feedback_policy=entry.feedback_policy, feedback_due_at=due_at)
    )
    session.flush()
    repriced = reprice_set(session, course, exercise, entry_rules(entry), apply=True)
    log.info(
        "set %s/%s published by %s: release %s, due %s, close %s, %g%% per %s, attempts %s, feedback %s, "
        "version %s; %d submissions re-priced, %d counted scores changed",
        course.slug,
        exercise,
        actor,
        release_at,
        due_at,
        close_at,
        entry.penalty_percent,
        penalty_unit,
        max_attempts,
        entry.feedback_policy,
        entry.content_version,
        repriced.rewritten,
        repriced.counted,
    )
    dates = ", ".join(
        f"{name} {course_time(moment, course)}"
        for name, moment in (("release", release_at), ("due", due_at), ("close", close_at))
        if moment is not None
    )
    audit.record(
        session,
        course,
        actor,
        AuditAction.SET_EDIT if existed else AuditAction.SET_PUBLISH,
        exercise,
        f"{dates or 'no dates'}; {late_rule(entry)}; attempts {max_attempts or 'no limit'}; feedback "
        f"{entry.feedback_policy}; {repriced.rewritten} submissions re-priced, {repriced.counted} counted scores changed",
    )
    return Published(entry, repriced)


def preview(
    session: Session,
    course: Course,
    exercise: str,
    *,
    release_at: datetime | None = None,
    due_at: datetime | None = None,
    close_at: datetime | None = None,
    penalty_percent: float = 0.0,
    penalty_unit: str = "day",
    max_attempts: int | None = None,
    feedback_policy: str = "full",
    version: str | None = None,
) -> Repricing:
    """What :func:`publish` with these arguments would do to the submissions so far: the same
    refusals, then the same re-pricing (:func:`reprice_set`) as a dry run that writes nothing."""
    _checked(
        session,
        course,
        exercise,
        release_at=release_at,
        due_at=due_at,
        close_at=close_at,
        penalty_percent=penalty_percent,
        penalty_unit=penalty_unit,
        max_attempts=max_attempts,
        feedback_policy=feedback_policy,
        version=version,
    )
    pin(session, SetEntry(course_id=course.id, exercise=exercise), find_exercise(exercise), version)  # never added
    rules = Rules(release_at, due_at, close_at, float(penalty_percent), penalty_unit, max_attempts)
    return reprice_set(session, course, exercise, rules, apply=False)


def entry_rules(entry: SetEntry) -> Rules:
    """A set entry's rules, before any learner's extension."""
    return Rules(
        entry.release_at, entry.due_at, entry.close_at, entry.penalty_percent, entry.penalty_unit, entry.max_attempts
    )


def late_rule(entry: SetEntry) -> str:
    """The entry's late rule in words (``server.courses.policy.late_rule``)."""
    return policy.late_rule(entry.penalty_percent, entry.penalty_unit)


def unpublish(session: Session, course: Course, exercise: str, *, actor: str = "unknown") -> None:
    """Take ``exercise`` out of the course's set (its submissions and scores stay, each under
    the feedback policy and due date it was last given: ``Submission.feedback_policy``);
    ``actor`` goes to the log line that records it."""
    entry = session.get(SetEntry, (course.id, exercise))
    if entry is None:
        raise ExerciseNotFound(f"{exercise!r} is not published in {course.slug!r}.")
    session.delete(entry)
    session.flush()
    log.info("set %s/%s unpublished by %s", course.slug, exercise, actor)
    audit.record(session, course, actor, AuditAction.SET_UNPUBLISH, exercise)


#: The policy "release scores now" leaves: every learner sees the whole report at once.
RELEASED_POLICY = PolicyKind.FULL.value


@dataclass(frozen=True)
class Released:
    """What :func:`release_scores` did: the entry under its new policy, and how many of the
    exercise's submissions in the course it covers (their scores shown now, or held again)."""

    entry: SetEntry
    submissions: int


def release_scores(
    session: Session, course: Course, exercise: str, *, hold: bool = False, actor: str = "unknown"
) -> Released:
    """Release the held-back scores of ``exercise`` in ``course`` now (its feedback policy
    becomes ``full``), or, with ``hold``, hold them again until each learner's due date
    (``hidden-until-due``, which needs a due date). The caller commits.

    The policy is the set's and its submissions' (as :func:`publish` writes it), so no new
    column is needed: a release is a policy change that re-prices nothing, recorded as
    ``scores.release`` / ``scores.hold`` in the audit log."""
    # a NUL names no exercise (PostgreSQL refuses it in a query): the same 404 as an unknown one
    entry = session.get(SetEntry, (course.id, exercise)) if is_storable_text(exercise) else None
    if entry is None:
        raise ExerciseNotFound(f"{exercise!r} is not published in {course.slug!r}.")
    held = entry.feedback_policy == PolicyKind.HIDDEN_UNTIL_DUE.value
    if hold == held:
        raise InvalidCourse(
            f"The scores of {exercise!r} are {'already held until the due date' if held else 'not held back'}."
        )
    if hold and entry.due_at is None:
        raise InvalidCourse("The feedback policy hidden-until-due releases scores at the due date: give a due date.")
    entry.feedback_policy = PolicyKind.HIDDEN_UNTIL_DUE.value if hold else RELEASED_POLICY
    covered = session.scalar(
        select(func.count())
        .select_from(Submission)
        .where(Submission.course_id == course.id, Submission.exercise == exercise)
    )
    session.execute(
        update(Submission)
        .where(Submission.course_id == course.id, Submission.exercise == exercise)
        .values(feedback_policy=entry.feedback_policy, feedback_due_at=entry.due_at)
    )
    session.flush()
    log.info("set %s/%s scores %s by %s", course.slug, exercise, "held" if hold else "released", actor)
    audit.record(
        session,
        course,
        actor,
        AuditAction.SCORES_HOLD if hold else AuditAction.SCORES_RELEASE,
        exercise,
        f"feedback {entry.feedback_policy}",
    )
    return Released(entry, covered or 0)


@dataclass(frozen=True)
class Granted:
    """An extension, and how many of the learner's graded submissions it re-priced."""

    extension: Extension
    recomputed: int


def extension_reason(reason: str) -> str:
    """An extension's reason on one line, or ``InvalidCourse`` when it is too long or cannot be
    stored (it may be empty)."""
    if not is_storable_text(reason):  # a NUL or a lone surrogate: PostgreSQL refuses the row (a 500)
        raise InvalidCourse("The reason holds a NUL byte or a lone surrogate, which cannot be stored.")
    reason = " ".join(reason.split())
    if len(reason) > MAX_REASON_CHARS:
        raise InvalidCourse(f"A reason is at most {MAX_REASON_CHARS} characters.")
    return reason


def _course_learner(session: Session, course: Course, user_name: str) -> User:
    user = session.scalar(select(User).where(User.name == user_name[:64]))
    if user is None or course_role(session, user, course) != LEARNER:
        raise UserNotFound(f"No learner {user_name!r} in {course.slug!r}.")
    return user


def _extension_entry(
    session: Session, course: Course, user_name: str, exercise: str, due_at: datetime
) -> tuple[User, SetEntry]:
    """The learner and the set entry an extension to ``due_at`` is for; every refusal
    :func:`grant_extension` and :func:`preview_extension` make."""
    user = _course_learner(session, course, user_name)
    entry = session.get(SetEntry, (course.id, exercise))
    if entry is None or entry.due_at is None:
        raise InvalidCourse(f"{exercise!r} has no due date in {course.slug!r}; publish it with one first.")
    if due_at <= entry.due_at:
        raise InvalidCourse(f"An extension must be later than the due date ({course_time(entry.due_at, course)}).")
    return user, entry


def grant_extension(
    session: Session,
    course: Course,
    user_name: str,
    exercise: str,
    due_at: datetime,
    *,
    actor: str = "unknown",
    reason: str = "",
) -> Granted:
    """Give one learner of ``course`` a later due date on one of its exercises, and recompute
    the late mark and penalty of the submissions they already made to it under the new
    rules (a submission the extension now covers is on time), then their best scores.
    Who granted it (``actor``) and why are kept on the extension and in the audit log."""
    user, _entry = _extension_entry(session, course, user_name, exercise, due_at)
    reason = extension_reason(reason)
    extension = session.get(Extension, (course.id, user.id, exercise)) or Extension(
        course_id=course.id, user_id=user.id, exercise=exercise
    )
    extension.due_at, extension.granted_at = due_at, utcnow()
    extension.granted_by, extension.reason = actor[:128], reason or None
    session.add(extension)
    session.flush()
    recomputed = reprice(session, course, user.id, exercise)
    audit.record(
        session,
        course,
        actor,
        AuditAction.EXTENSION_GRANT,
        f"{user.name}/{exercise}",
        f"due {course_time(due_at, course)}; {recomputed} submissions re-priced" + (f": {reason}" if reason else ""),
    )
    return Granted(extension, recomputed)


def remove_extension(session: Session, course: Course, user_name: str, exercise: str, *, actor: str) -> int:
    """Take a learner's extension on one exercise back: the set's dates hold for them again and
    their submissions are re-priced under them. Returns how many changed; ``InvalidCourse``
    when they have no extension there."""
    user = _course_learner(session, course, user_name)
    extension = session.get(Extension, (course.id, user.id, exercise))
    if extension is None:
        raise InvalidCourse(f"{user.name!r} has no extension on {exercise!r} in {course.slug!r}.")
    session.delete(extension)
    session.flush()
    recomputed = reprice(session, course, user.id, exercise)
    audit.record(
        session,
        course,
        actor,
        AuditAction.EXTENSION_REMOVE,
        f"{user.name}/{exercise}",
        f"{recomputed} submissions re-priced",
    )
    return recomputed


def preview_extension(session: Session, course: Course, user_name: str, exercise: str, due_at: datetime) -> int:
    """What :func:`grant_extension` with these arguments would do: the same refusals, then how
    many of the learner's submissions it would re-price (the dry run); writes nothing."""
    user, entry = _extension_entry(session, course, user_name, exercise, due_at)
    rules = entry_rules(entry).with_extension(due_at)
    return sum(
        _priced(submission, rules) is not None for submission in _submissions_of(session, course, user.id, exercise)
    )


def _submissions_of(session: Session, course: Course, user_id: int, exercise: str) -> list[Submission]:
    """One learner's submissions to one exercise of ``course``."""
    return list(
        session.scalars(
            select(Submission).where(
                Submission.course_id == course.id, Submission.user_id == user_id, Submission.exercise == exercise
            )
        )
    )


def _priced(submission: Submission, rules: Rules) -> tuple[int | None, float] | None:
    """The lateness and penalty ``rules`` give ``submission``, or None when they are those it has."""
    late = rules.late_seconds(submission.created_at)
    penalty = rules.penalty_for(late)
    if late == submission.late_seconds and penalty == (submission.penalty_percent or 0.0):
        return None
    return late, penalty


def _reprice_one(submission: Submission, late: int | None, penalty: float, *, apply: bool) -> bool:
    """Put ``submission`` under a new lateness and penalty (``apply``: else only look); whether
    its counted score changes."""
    graded = submission.verdict == Verdict.GRADED.value
    counted = submission_counted(submission.score, penalty) if graded else submission.counted_score
    changes = counted != submission.counted_score
    if apply:
        submission.late_seconds, submission.penalty_percent = late, penalty
        if graded:
            submission.counted_score = counted
            submission.board_score = submission_board(submission.checks, penalty)
    return changes


def reprice(session: Session, course: Course, user_id: int, exercise: str) -> int:
    """Recompute the lateness, penalty and counted score of one learner's submissions to one
    exercise under the rules in force now (extension included); re-count their best scores
    when any changed. Returns how many submissions changed."""
    rules = rules_for(session, course, user_id, exercise)
    if rules is None:
        return 0
    changed = 0
    for submission in _submissions_of(session, course, user_id, exercise):
        priced = _priced(submission, rules)
        if priced is None:
            continue
        _reprice_one(submission, *priced, apply=True)
        changed += 1
    if changed:
        session.flush()
        backfill_best_scores(session, course.id, user_id, exercise)
    return changed


def reprice_set(session: Session, course: Course, exercise: str, rules: Rules, *, apply: bool) -> Repricing:
    """Put every learner's submissions to ``exercise`` in ``course`` under ``rules`` (each with
    their own extension), and re-count the best scores of those whose pricing changed;
    ``apply=False``: the same walk, writing nothing (the dry run the dashboard shows before it
    applies). The course's instructors' submissions are never late (:func:`accept`): left alone."""
    extended = {
        x.user_id: x.due_at
        for x in session.scalars(
            select(Extension).where(Extension.course_id == course.id, Extension.exercise == exercise)
        )
    }
    roles: dict[int, bool] = {}
    rewritten = counted = 0
    touched: set[int] = set()
    rows = session.scalars(
        select(Submission)
        .where(Submission.course_id == course.id, Submission.exercise == exercise)
        .order_by(Submission.id)
    ).all()
    for submission in rows:
        uid = submission.user_id
        if uid not in roles:
            owner = session.get(User, uid)
            roles[uid] = owner is not None and course_role(session, owner, course) == INSTRUCTOR
        if roles[uid]:
            continue
        priced = _priced(submission, rules.with_extension(extended.get(uid)))
        if priced is None:
            continue
        rewritten += 1
        counted += _reprice_one(submission, *priced, apply=apply)
        touched.add(uid)
    if apply and touched:
        session.flush()
        for uid in sorted(touched):
            backfill_best_scores(session, course.id, uid, exercise)
    return Repricing(rewritten, counted)


def course_set(session: Session, course: Course) -> CourseSet:
    """The course's set as its staff read it (``GET /courses/{course}/sets``, ``ppo-grader sets
    list``): every entry in catalogue order, its times in the course's zone."""
    return CourseSet(
        course=course.slug,
        time_zone=course.time_zone,
        entries=[entry_public(e, course) for e in entries(session, course)],
    )


def entry_public(entry: SetEntry, course: Course) -> SetEntryPublic:
    """One set entry in wire form, its times in the course's zone."""
    return SetEntryPublic(
        exercise=entry.exercise,
        release_at=local(entry.release_at, course),
        due_at=local(entry.due_at, course),
        close_at=local(entry.close_at, course),
        penalty_percent=entry.penalty_percent,
        penalty_unit=entry.penalty_unit,  # type: ignore[arg-type]  # the column holds day or hour (its check)
        max_attempts=entry.max_attempts,
        feedback_policy=entry.feedback_policy,
        version=entry.content_version,
    )


def course_exercises(session: Session, course: Course) -> list[str]:
    """The slugs a course grades, in catalogue order (the default course: the catalogue)."""
    if course.id == DEFAULT_COURSE_ID:
        return [e.slug for e in catalogue_index()]
    return [e.exercise for e in entries(session, course)]


def entries(session: Session, course: Course) -> list[SetEntry]:
    """The course's set, in catalogue order."""
    order = {e.slug: (e.order, e.slug) for e in catalogue_index()}
    found = session.scalars(select(SetEntry).where(SetEntry.course_id == course.id))
    return sorted(found, key=lambda e: order.get(e.exercise, (10**6, e.exercise)))


def rules_for(session: Session, course: Course, user_id: int, exercise: str) -> Rules | None:
    """The rules in force for this learner, extension included; None when the exercise is
    not part of the course. The default course opens every catalogue exercise without
    dates unless it publishes an entry for it."""
    entry = session.get(SetEntry, (course.id, exercise))
    if entry is None:
        return Rules(None, None, None) if course.id == DEFAULT_COURSE_ID else None
    rules = entry_rules(entry)
    extension = session.get(Extension, (course.id, user_id, exercise))
    return rules.with_extension(extension.due_at if extension else None)


def attempts_used(session: Session, course_id: int, user_id: int, exercise: str) -> int:
    """Submissions that count against an attempt limit: every one not failed by the grader
    (queued and running ones too, so a burst cannot overrun the limit)."""
    return (
        session.scalar(
            select(func.count())
            .select_from(Submission)
            .where(
                Submission.course_id == course_id,
                Submission.user_id == user_id,
                Submission.exercise == exercise,
                uses_an_attempt(),
            )
        )
        or 0
    )


@dataclass(frozen=True)
class Acceptance:
    """How an accepted submission stands: seconds late (None: on time) and the penalty fixed
    now; the set's feedback policy and due date it is under (None: no set entry, ``full``),
    stored on the row so that they outlive the entry (``Submission.feedback_policy``)."""

    late_seconds: int | None
    penalty_percent: float
    feedback_policy: str | None = None
    feedback_due_at: datetime | None = None


def accept(session: Session, course: Course, user: User, exercise: str, now: datetime) -> Acceptance:
    """Check a learner's submission against the course's rules at ``now``; raise the
    matching 403 (with the date, in the course's zone) or return how late it is.

    The course's instructors are never refused and never late: they try exercises out.
    """
    role = course_role(session, user, course)
    rules = rules_for(session, course, user.id, exercise)
    missing = ExerciseNotFound(f"{exercise!r} is not part of the course {course.slug!r}.")
    if rules is None:
        raise missing
    entry = session.get(SetEntry, (course.id, exercise))  # read by rules_for: from the session's map
    policy = entry.feedback_policy if entry is not None else None
    due_at = entry.due_at if entry is not None else None
    if role == INSTRUCTOR:
        return Acceptance(None, 0.0, policy, due_at)
    phase = rules.phase(now)
    if phase is Phase.NOT_RELEASED:
        # the same 404 as an exercise the course never published: before its release a learner
        # is told nothing of it, not even that it exists or when it opens (review 4, finding 14)
        raise missing
    if phase is Phase.CLOSED:
        assert rules.close_at is not None
        raise SubmissionsClosed(
            f"{exercise!r} closed on {course_time(rules.close_at, course)} in {course.slug!r}; submissions are no longer accepted."
        )
    if rules.max_attempts is not None:
        used = attempts_used(session, course.id, user.id, exercise)
        if used >= rules.max_attempts:
            raise AttemptLimitReached(
                f"You have used all {rules.max_attempts} attempts on {exercise!r} in {course.slug!r}."
            )
    late = rules.late_seconds(now)
    return Acceptance(late, rules.penalty_for(late), policy, due_at)


def late_notice(session: Session, course: Course, user: User, exercise: str, now: datetime) -> str | None:
    """What a learner reads before a submission past its due date is sent (the browser's upload
    asks them to confirm it, as ``ppo-submit`` asks "Send it late?"): when it was due, what
    the lateness costs, when submissions close. None when it would be on time, and for the
    course's instructors (never late); a submission that would be refused (not part of the
    course, closed) is left to :func:`accept`, which says why."""
    if course_role(session, user, course) == INSTRUCTOR:
        return None
    rules = rules_for(session, course, user.id, exercise)
    if rules is None or rules.phase(now) is not Phase.LATE or rules.due_at is None:
        return None
    penalty = rules.penalty_for(rules.late_seconds(now))
    cost = (
        f"sent now, it loses {penalty:g}% of its score ({rules.penalty_percent:g}% per {rules.penalty_unit} started late)"
        if penalty
        else "sent now, it is flagged late (no penalty)"
    )
    close = f"; submissions close on {course_time(rules.close_at, course)}" if rules.close_at is not None else ""
    return f"{exercise} was due on {course_time(rules.due_at, course)} in {course.slug}: {cost}{close}."


@dataclass(frozen=True)
class ListedExercise:
    """One exercise of a course as one member sees it at one moment."""

    exercise: str
    title: str
    function: str
    phase: Phase
    rules: Rules
    attempts_used: int
    feedback_policy: str = "full"


def listing(session: Session, course: Course, user: User, now: datetime) -> list[ListedExercise]:
    """The course's exercises for ``user``: learners see released ones only (with their own
    extension and attempts), instructors every one."""
    catalogue = {e.slug: e for e in list_exercises()}
    slugs = [e.exercise for e in entries(session, course)]
    if course.id == DEFAULT_COURSE_ID:
        slugs += [slug for slug in catalogue if slug not in slugs]
    teaching = course_role(session, user, course) == INSTRUCTOR
    found = (_listed(session, course, user, slug, catalogue.get(slug), teaching, now) for slug in slugs)
    return [item for item in found if item is not None]


def listed(session: Session, course: Course, user: User, exercise: str, now: datetime) -> ListedExercise | None:
    """One exercise as :func:`listing` lists it for ``user`` (None where the listing leaves it
    out), without reading the rest of the set."""
    summary = next((e for e in list_exercises() if e.slug == exercise), None)
    teaching = course_role(session, user, course) == INSTRUCTOR
    return _listed(session, course, user, exercise, summary, teaching, now)


def _listed(
    session: Session,
    course: Course,
    user: User,
    slug: str,
    summary: ExerciseSummary | None,
    teaching: bool,
    now: datetime,
) -> ListedExercise | None:
    rules = rules_for(session, course, user.id, slug)
    if rules is None or summary is None:
        return None  # not in the set, or removed from the catalogue since it was published
    phase = rules.phase(now)
    if phase is Phase.NOT_RELEASED and not teaching:
        return None
    entry = session.get(SetEntry, (course.id, slug))
    return ListedExercise(
        slug,
        summary.title,
        summary.function,
        phase,
        rules,
        attempts_used(session, course.id, user.id, slug),
        entry.feedback_policy if entry is not None else "full",
    )


def released_exercises(session: Session, user: User, now: datetime) -> set[str] | None:
    """Slugs a learner may see in the catalogue: those released in one of their courses
    (None: everything, for instructors and for learners of the default course)."""
    visible: set[str] = set()
    for course, role in courses_of(session, user):
        if role == INSTRUCTOR or course.id == DEFAULT_COURSE_ID:
            return None
        visible.update(e.exercise for e in entries(session, course) if e.release_at is None or e.release_at <= now)
    return visible
