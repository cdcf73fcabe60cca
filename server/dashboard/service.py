"""The dashboard's queries, per course: every class query starts from ``_learner_rows`` or
``_learner_best`` with the course's id.

Same rules as the leaderboard and the statistics API (``server.leaderboard.service``,
``server.stats.service``): learners only; an attempt is a finished submission that is not
an ``internal_error``; a mistake counts when a failed check of a graded submission
names it. The exercise page's histogram, check bars and mistake bars are the
statistics API's own numbers (``exercise_stats``), so the page and the API cannot disagree.
Mistakes are counted by the mistake's id and shown with its current title, as the
statistics do (``server.stats.service.mistake_key``).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from sqlalchemy import distinct, func, select
from sqlalchemy.orm import Session, selectinload

from server.courses.counted import ExerciseScore, counts_as_attempt, course_scores
from server.leaderboard.service import learner_ids
from server.models import DEFAULT_COURSE_ID, CheckResult, Submission, User, Verdict, aware_utc
from server.stats.schemas import ExerciseStats
from server.stats.service import current_mistake_title, exercise_stats, mistake_key

S = Submission
C = CheckResult

#: The submissions-per-day chart shows at most this many days, ending at the last one.
MAX_DAYS = 60


def _learner_rows(course_id: int) -> list:  # type: ignore[type-arg]
    """Filters on ``submissions`` for one course's class: its learners and its rows (other
    courses' learners and submissions never show)."""
    return [S.course_id == course_id, S.user_id.in_(learner_ids(course_id))]


def _learner_set(session: Session, course_id: int) -> set[int]:
    """The ids of one course's learners (the class)."""
    return set(session.scalars(learner_ids(course_id)))


# --- the class -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ExerciseLine:
    """One exercise on the class page."""

    slug: str
    attempts: int  # finished, not the grader's fault (the leaderboard's attempts)
    learners_attempted: int
    learners_solved: int
    top_mistake_title: str | None
    top_mistake_learners: int
    #: What the top mistake's link names: its id (or, stored before ids, its title).
    top_mistake: str | None = None


@dataclass(frozen=True)
class MistakeCount:
    exercise: str
    #: The title shown (the catalogue's current one).
    mistake_title: str
    learners: int
    #: What it is counted and linked by: the mistake's id (or, stored before ids, its title).
    mistake: str = ""


def class_overview(
    session: Session, slugs: list[str], course_id: int = DEFAULT_COURSE_ID
) -> tuple[list[ExerciseLine], list[MistakeCount]]:
    """Per exercise (in ``slugs`` order): attempts, learners attempted and solved (the score
    that counts is full: ``server.courses.counted``) and the most common mistake; and
    every (exercise, mistake) by learners, most first."""
    best: dict[str, tuple[int, int, int]] = {}
    learners = _learner_set(session, course_id)
    for (uid, ex), score in course_scores(session, course_id).items():
        if uid in learners and score.attempts:
            attempted, solved, attempts = best.get(ex, (0, 0, 0))
            best[ex] = (attempted + 1, solved + score.solved, attempts + score.attempts)
    # The failed checks that name a mistake first (a few thousand of the check rows),
    # then their submissions by primary key: about half the work of walking every
    # submission's checks, which is the plan the databases otherwise choose.
    named = (
        select(
            C.submission_id.label("submission_id"),
            mistake_key().label("mistake"),
            C.mistake_title.label("mistake_title"),
        )
        .where(C.passed.is_(False), mistake_key().is_not(None))
        .cte("named")
        .prefix_with("MATERIALIZED")
    )
    mistakes = sorted(
        (
            MistakeCount(ex, current_mistake_title(key, stored), int(n), key)
            for ex, key, stored, n in session.execute(
                select(S.exercise, named.c.mistake, func.max(named.c.mistake_title), func.count(distinct(S.user_id)))
                .select_from(named)
                .join(S, S.id == named.c.submission_id)
                .where(*_learner_rows(course_id), S.verdict == Verdict.GRADED.value)
                .group_by(S.exercise, named.c.mistake)
            ).tuples()
        ),
        key=lambda m: (-m.learners, m.exercise, m.mistake_title),
    )
    top: dict[str, MistakeCount] = {}
    for m in mistakes:
        top.setdefault(m.exercise, m)
    lines = [
        ExerciseLine(
            slug=slug,
            attempts=best.get(slug, (0, 0, 0))[2],
            learners_attempted=best.get(slug, (0, 0, 0))[0],
            learners_solved=best.get(slug, (0, 0, 0))[1],
            top_mistake_title=top[slug].mistake_title if slug in top else None,
            top_mistake_learners=top[slug].learners if slug in top else 0,
            top_mistake=top[slug].mistake if slug in top else None,
        )
        for slug in slugs
    ]
    return lines, [m for m in mistakes if m.exercise in set(slugs)]


@dataclass(frozen=True)
class LearnerLine:
    user_id: int
    name: str
    display_name: str
    attempted: int
    solved: int
    attempts: int
    last_submitted: datetime | None


def learners(
    session: Session, limit: int, offset: int, course_id: int = DEFAULT_COURSE_ID
) -> tuple[int, list[LearnerLine]]:
    """Every learner by login: exercises attempted and solved, attempts, last submission.

    The page's learners first, then the aggregates for those ids only, so a page costs the
    same however large the class and its history are.
    """
    total = session.scalar(select(func.count()).select_from(User).where(User.id.in_(learner_ids(course_id)))) or 0
    people = (
        session.execute(
            select(User.id, User.name, User.display_name)
            .where(User.id.in_(learner_ids(course_id)))
            .order_by(User.name)
            .limit(limit)
            .offset(offset)
        )
        .tuples()
        .all()
    )
    ids = [row[0] for row in people]
    best: dict[int, tuple[int, int, int]] = {}
    for (uid, _ex), score in course_scores(session, course_id, user_ids=ids).items():
        if score.attempts:
            attempted, solved, attempts = best.get(uid, (0, 0, 0))
            best[uid] = (attempted + 1, solved + score.solved, attempts + score.attempts)
    last = dict(
        session.execute(
            select(S.user_id, func.max(S.created_at))
            .where(S.user_id.in_(ids), S.course_id == course_id)
            .group_by(S.user_id)
        )
        .tuples()
        .all()
    )
    return total, [
        LearnerLine(uid, name, display, *best.get(uid, (0, 0, 0)), aware_utc(last.get(uid)))
        for uid, name, display in people
    ]


# --- one exercise --------------------------------------------------------------------------


@dataclass(frozen=True)
class ExerciseView:
    """Everything the exercise page draws."""

    stats: ExerciseStats
    per_day: list[tuple[date, int]]  # consecutive days, oldest first, at most MAX_DAYS
    days_before: int  # submissions on days before the first one shown
    median_attempts_to_solve: float | None
    solvers: int  # learners the median is over
    recent: list[SubmissionLine]


def exercise_view(session: Session, slug: str, course_id: int = DEFAULT_COURSE_ID) -> ExerciseView:
    """The statistics API's numbers for ``slug`` in one course plus submissions per day, the
    median attempts to solve and the latest submissions."""
    per_day, before = submissions_per_day(session, slug, course_id)
    median, solvers = median_attempts_to_solve(session, slug, course_id)
    return ExerciseView(
        stats=exercise_stats(session, slug, course_id),
        per_day=per_day,
        days_before=before,
        median_attempts_to_solve=median,
        solvers=solvers,
        recent=recent_submissions(session, exercise=slug, limit=20, course_id=course_id),
    )


def submissions_per_day(
    session: Session, slug: str, course_id: int = DEFAULT_COURSE_ID
) -> tuple[list[tuple[date, int]], int]:
    """(day, submissions) for every day (UTC) from the first to the last with a submission,
    zeros included, cut to the last ``MAX_DAYS``; and how many came before the cut."""
    day = (
        func.date(S.created_at)
        if session.get_bind().dialect.name == "sqlite"
        else func.date(func.timezone("UTC", S.created_at))
    )
    counts: dict[date, int] = {}
    for value, n in session.execute(
        select(day.label("d"), func.count()).where(S.exercise == slug, *_learner_rows(course_id)).group_by("d")
    ).tuples():
        counts[value if isinstance(value, date) else date.fromisoformat(str(value))] = int(n)
    if not counts:
        return [], 0
    last = max(counts)
    first = max(min(counts), last - timedelta(days=MAX_DAYS - 1))
    days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    before = sum(n for d, n in counts.items() if d < first)
    return [(d, counts.get(d, 0)) for d in days], before


def median_attempts_to_solve(
    session: Session, slug: str, course_id: int = DEFAULT_COURSE_ID
) -> tuple[float | None, int]:
    """The median, over learners whose score that counts is full (the class page's "solved"),
    of their attempts up to and including the first full score (or the override that made
    it full); and how many such learners there are."""
    solved_at = {
        uid: aware_utc(score.solved_at)
        for (uid, _ex), score in course_scores(session, course_id, exercises=[slug]).items()
        if score.solved and score.solved_at is not None
    }
    attempts: dict[int, int] = {}
    for uid, at in session.execute(
        select(S.user_id, S.created_at).where(
            S.exercise == slug, *_learner_rows(course_id), counts_as_attempt(), S.user_id.in_(list(solved_at))
        )
    ).tuples():
        if aware_utc(at) <= solved_at[uid]:
            attempts[uid] = attempts.get(uid, 0) + 1
    rows = [attempts.get(uid, 0) for uid in solved_at]
    return (float(statistics.median(rows)) if rows else None), len(rows)


@dataclass(frozen=True)
class MistakeHolder:
    """A learner who hit a mistake, and where they stand now."""

    user_id: int
    name: str
    display_name: str
    submissions: int  # graded submissions that hit it
    first_at: datetime
    last_at: datetime
    last_submission_id: int
    counted_score: float | None
    solved: bool


def mistake_holders(
    session: Session, slug: str, mistake: str, course_id: int = DEFAULT_COURSE_ID
) -> list[MistakeHolder]:
    """Learners whose graded submissions of ``slug`` hit ``mistake`` (its id, or for results
    stored before ids its title), the most recent first (who is stuck now)."""
    hits = (
        select(
            S.user_id.label("user_id"),
            func.count(distinct(S.id)).label("n"),
            func.min(S.created_at).label("first_at"),
            func.max(S.created_at).label("last_at"),
            func.max(S.id).label("last_id"),
        )
        .join(C, C.submission_id == S.id)
        .where(
            S.exercise == slug,
            *_learner_rows(course_id),
            S.verdict == Verdict.GRADED.value,
            C.passed.is_(False),
            mistake_key() == mistake,
        )
        .group_by(S.user_id)
        .subquery()
    )
    rows = (
        session.execute(
            select(User.id, User.name, User.display_name, hits.c.n, hits.c.first_at, hits.c.last_at, hits.c.last_id)
            .join(hits, hits.c.user_id == User.id)
            .order_by(hits.c.last_at.desc(), User.name)
        )
        .tuples()
        .all()
    )
    scores = course_scores(session, course_id, user_ids=[r[0] for r in rows], exercises=[slug])
    return [
        MistakeHolder(
            uid,
            name,
            display,
            int(n),
            aware_utc(first),  # type: ignore[arg-type]  # a learner who holds a mistake has a first time
            aware_utc(last),  # type: ignore[arg-type]  # ... and a last one
            int(last_id),
            scores[(uid, slug)].counted if (uid, slug) in scores else None,
            (uid, slug) in scores and scores[(uid, slug)].solved,
        )
        for uid, name, display, n, first, last, last_id in rows
    ]


# --- one learner ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SubmissionLine:
    id: int
    user_name: str
    display_name: str
    exercise: str
    status: str
    verdict: str | None
    score: float | None  # raw
    created_at: datetime
    late_seconds: int | None = None
    penalty_percent: float = 0.0
    counted_score: float | None = None


@dataclass(frozen=True)
class LearnerExercise:
    slug: str
    score: ExerciseScore | None  # None: never attempted, no correction
    last: SubmissionLine | None  # the latest submission to the course, any status
    best_hidden: bool = False  # the feedback policy holds the score back (hidden-until-due)

    @property
    def attempts(self) -> int:
        return 0 if self.score is None else self.score.attempts


def learner_by_name(session: Session, name: str) -> User | None:
    """The user called ``name`` (any role), or None."""
    return session.scalar(select(User).where(User.name == name))


def learner_exercises(
    session: Session, user_id: int, slugs: list[str], course_id: int = DEFAULT_COURSE_ID
) -> list[LearnerExercise]:
    """Every exercise of ``slugs`` in one course: the score that counts and the latest submission."""
    scores = course_scores(session, course_id, user_ids=[user_id])
    latest_ids = select(func.max(S.id)).where(S.user_id == user_id, S.course_id == course_id).group_by(S.exercise)
    latest = {line.exercise: line for line in _lines(session, S.id.in_(latest_ids))}
    return [LearnerExercise(slug, scores.get((user_id, slug)), latest.get(slug)) for slug in slugs]


def recent_submissions(
    session: Session,
    *,
    user_id: int | None = None,
    exercise: str | None = None,
    limit: int = 50,
    offset: int = 0,
    course_id: int = DEFAULT_COURSE_ID,
) -> list[SubmissionLine]:
    """Submissions to one course newest first, of one user or of its learners, optionally of one exercise."""
    where = [S.user_id == user_id, S.course_id == course_id] if user_id is not None else _learner_rows(course_id)
    if exercise is not None:
        where.append(S.exercise == exercise)
    return _lines(session, *where, limit=limit, offset=offset)


def count_submissions(session: Session, user_id: int, course_id: int = DEFAULT_COURSE_ID) -> int:
    """How many submissions ``user_id`` has made to one course (any status)."""
    return (
        session.scalar(select(func.count()).select_from(S).where(S.user_id == user_id, S.course_id == course_id)) or 0
    )


def _lines(session: Session, *where, limit: int | None = None, offset: int = 0) -> list[SubmissionLine]:  # type: ignore[no-untyped-def]
    query = (
        select(
            S.id,
            User.name,
            User.display_name,
            S.exercise,
            S.status,
            S.verdict,
            S.score,
            S.created_at,
            S.late_seconds,
            S.penalty_percent,
            S.counted_score,
        )
        .join(User, User.id == S.user_id)
        .where(*where)
        .order_by(S.id.desc())
        .offset(offset)
    )
    if limit is not None:
        query = query.limit(limit)
    return [SubmissionLine(*row) for row in session.execute(query).tuples()]


def submission_with_checks(session: Session, submission_id: int) -> Submission | None:
    """One submission with its owner and checks loaded, or None."""
    return session.scalar(select(S).where(S.id == submission_id).options(selectinload(S.checks), selectinload(S.user)))


# --- live updates --------------------------------------------------------------------------


def upload_replay(session: Session, user_id: int, key: str, separator: str) -> Submission | None:
    """The learner's submission stored under the upload form's ``key`` (whatever was sent with
    it: the stored key is ``key``, ``separator`` and a digest), if any: one indexed lookup."""
    prefix = key + separator
    return session.scalar(
        select(Submission)
        .where(Submission.user_id == user_id, Submission.idempotency_key.startswith(prefix, autoescape=True))
        .limit(1)
    )
