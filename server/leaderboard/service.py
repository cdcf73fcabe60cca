"""Leaderboard rules, in SQL so that 100,000 submissions answer quickly.

- Only learners are ranked; instructors' and admins' test runs never appear.
- An attempt is a finished submission whose verdict is not ``internal_error`` (the
  grader's fault never counts; ``server.courses.counted.counts_as_attempt``). Queued and
  running rows are not attempts yet.
- The best score is the maximum over ``graded`` rows only, so a crash, a time limit or any
  other failure can never lower it. A learner with attempts but no graded run has best 0.
- The best was "reached" at the earliest ``created_at`` (submission time, not grading
  time, so a slow queue does not reorder learners) of a graded row with that score.
- Order: best desc, reached-at asc (never-reached last), user id asc: stable across pages.
- Stored per (user, exercise) in ``best_scores``, updated with each verdict; the speed
  board still reads the submissions.
- Overall: per learner, the sum over exercises of the per-exercise bests; reached-at is the
  latest of the per-exercise reached-ats (when that total was first complete).
- Per course: only the course's learners and the submissions made to it. The best that
  ranks is the best board score: the score that counts (after a late penalty) of the checks
  the judge confirmed, self-reported ones left out (``server.courses.counted.submission_board``; the
  score that counts where a verdict predates it); the raw best rides along.
- The speed board takes submissions whose board score is full: every confirmed check passed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from server.courses.counted import FULL_SCORE, course_scores
from server.courses.service import member_ids_of
from server.models import DEFAULT_COURSE_ID, Submission, User, Verdict, aware_utc
from server.security import pseudonym

S = Submission


def learner_ids(course_id: int = DEFAULT_COURSE_ID) -> Select[tuple[int]]:
    """SQL: the learners a course's boards rank (``server.courses.service.member_ids_of``)."""
    return member_ids_of(course_id)


@dataclass(frozen=True)
class BoardRow:
    user_id: int
    name: str
    display_name: str
    best: float
    attempts: int
    solved: int
    reached_at: datetime | None
    raw_best: float = 0.0


def board(
    session: Session,
    exercise: str | None,
    limit: int,
    offset: int,
    course_id: int = DEFAULT_COURSE_ID,
    hidden: frozenset[str] = frozenset(),
    *,
    secret: bytes | None = None,
) -> tuple[int, list[BoardRow]]:
    """(learners on the course's board, one page of rows in the stable order), without the
    ``hidden`` exercises (a feedback policy holding their scores back). Ties are broken by the
    learners' pseudonyms in the course (``secret``: the server's key), never by account id:
    ids follow the order accounts were made (a class list), which would map the pseudonyms.
    Without ``secret`` (instructors' own tools: a regrade's rank changes) ties go by id.

    Scores come from ``server.courses.counted.course_scores`` (late penalties, overrides,
    excuses), one row per learner and exercise, so the board ranks what the gradebooks
    and pages show; an excused exercise adds nothing, and a learner excused from an exercise is
    not on its board (nor on the overall one by that exercise alone). Ranked in Python: a course has a few
    thousand such rows at most."""
    people = {
        uid: (name, display)
        for uid, name, display in session.execute(
            select(User.id, User.name, User.display_name).where(User.id.in_(learner_ids(course_id)))
        ).tuples()
    }
    totals: dict[int, list] = {}  # type: ignore[type-arg]
    scores = course_scores(session, course_id, exercises=None if exercise is None else [exercise])
    for (uid, slug), score in scores.items():
        if uid not in people or slug in hidden or score.excused:
            continue  # an excused learner is not ranked on that exercise (nor given a 0 for it)
        row = totals.setdefault(uid, [0.0, 0.0, 0, 0, None])
        row[0] += score.board_points  # confirmed checks only: self-reported facts earn no place
        row[1] += score.raw_best or 0.0
        row[2] += score.attempts
        row[3] += 1 if score.board_solved else 0
        reached = aware_utc(score.board_reached_at)  # the latest: when the total was first complete
        if reached is not None and (row[4] is None or reached > row[4]):
            row[4] = reached
    rows = [
        BoardRow(uid, people[uid][0], people[uid][1], round(best, 6), attempts, solved, at, raw)
        for uid, (best, raw, attempts, solved, at) in totals.items()
    ]

    def tie(user_id: int) -> tuple[str, int]:
        return (pseudonym(user_id, secret, course_id) if secret is not None else "", user_id)

    rows.sort(key=lambda r: (-r.best, r.reached_at is None, r.reached_at or _EPOCH, tie(r.user_id)))
    return len(rows), rows[offset : offset + limit]


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class SpeedRow:
    user_id: int
    name: str
    display_name: str
    submission_id: int
    cpu_seconds: float | None
    peak_memory_bytes: int | None
    created_at: datetime


def speed_board(
    session: Session, exercise: str, limit: int, offset: int, course_id: int = DEFAULT_COURSE_ID
) -> tuple[int, list[SpeedRow]]:
    """A course's learners with a graded 100 that counts, each by their fastest such submission."""
    order = (
        S.cpu_seconds.is_(None),
        S.cpu_seconds.asc(),
        S.peak_memory_bytes.is_(None),
        S.peak_memory_bytes.asc(),
        S.created_at.asc(),
        S.id.asc(),
    )
    ranked = (
        select(
            S.id.label("submission_id"),
            S.user_id.label("user_id"),
            S.cpu_seconds.label("cpu_seconds"),
            S.peak_memory_bytes.label("peak_memory_bytes"),
            S.created_at.label("created_at"),
            func.row_number().over(partition_by=S.user_id, order_by=order).label("n"),
        )
        .where(
            S.course_id == course_id,
            S.exercise == exercise,
            S.verdict == Verdict.GRADED.value,
            # Every confirmed check passed, on time: a self-reported check's points decide nothing here.
            func.coalesce(S.board_score, S.counted_score) >= FULL_SCORE,
            S.user_id.in_(learner_ids(course_id)),
        )
        .subquery("ranked")
    )
    best = select(ranked).where(ranked.c.n == 1).subquery("best")
    total = session.scalar(select(func.count()).select_from(best)) or 0
    query = (
        select(
            User.id,
            User.name,
            User.display_name,
            best.c.submission_id,
            best.c.cpu_seconds,
            best.c.peak_memory_bytes,
            best.c.created_at,
        )
        .join(best, best.c.user_id == User.id)
        .order_by(
            best.c.cpu_seconds.is_(None),
            best.c.cpu_seconds.asc(),
            best.c.peak_memory_bytes.is_(None),
            best.c.peak_memory_bytes.asc(),
            best.c.created_at.asc(),
            User.id.asc(),
        )
        .limit(limit)
        .offset(offset)
    )
    page = [
        SpeedRow(r[0], r[1], r[2], r[3], r[4], r[5], aware_utc(r[6]))  # type: ignore[arg-type]
        for r in session.execute(query).tuples()
    ]
    return total, page
