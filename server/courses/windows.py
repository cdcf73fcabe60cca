"""What one member sees of a course's exercises now: the one reader behind ``GET
/courses/{course}/exercises`` (so ``ppo-submit exercises``) and the learner's dashboard page, so
the two never disagree on a date, an attempt count, a feedback policy or the tokens left.

Each exercise's window carries its dates in the course's zone (the member's extension applied),
the time left, the late rule, the attempts used (``server.courses.sets.attempts_used``: the one
count the attempt limit reads, whatever the feedback policy hides), the feedback policy and,
under ``tokens:N``, the learner's tokens left today; ``excused`` when an instructor excused the
learner from it (then no late rule applies to them: a late submission costs nothing that counts).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.courses import service, sets
from server.courses.counted import corrections_in_force
from server.courses.feedback_policy import FeedbackPolicy, PolicyKind, tokens_spent_today
from server.courses.schemas import ExerciseWindow
from server.models import Course, ScoreCorrection, User


def tokens_left(session: Session, course: Course, user: User, item: sets.ListedExercise, now: datetime) -> int | None:
    """A learner's tokens left today on a ``tokens:N`` exercise (None otherwise, and for the
    course's instructors, who see every report)."""
    policy = FeedbackPolicy.parse(item.feedback_policy)
    if policy.kind is not PolicyKind.TOKENS or service.course_role(session, user, course) != service.LEARNER:
        return None
    return policy.tokens_left(tokens_spent_today(session, course, user.id, item.exercise, now))


def excused_exercises(session: Session, course: Course, user: User) -> set[str]:
    """The exercises of ``course`` the learner is excused from (an excuse in force)."""
    query = select(ScoreCorrection).where(ScoreCorrection.course_id == course.id, ScoreCorrection.user_id == user.id)
    _overrides, excuses = corrections_in_force(session, query)
    return {exercise for _user, exercise in excuses}


def window(
    item: sets.ListedExercise, course: Course, now: datetime, tokens_left: int | None = None, excused: bool = False
) -> ExerciseWindow:
    """One listed exercise on the wire: its dates in the course's zone, seconds to the due date
    and the close, its rules and the member's attempts."""
    rules = item.rules

    def until(moment: datetime | None) -> int | None:
        return None if moment is None else int((moment - now).total_seconds())

    return ExerciseWindow(
        exercise=item.exercise,
        title=item.title,
        function=item.function,
        status=item.phase,
        release_at=service.local(rules.release_at, course),
        due_at=service.local(rules.due_at, course),
        close_at=service.local(rules.close_at, course),
        extended=rules.extended,
        seconds_to_due=until(rules.due_at),
        seconds_to_close=until(rules.close_at),
        penalty_percent=rules.penalty_percent,
        penalty_unit=rules.penalty_unit,
        max_attempts=rules.max_attempts,
        attempts_used=item.attempts_used,
        feedback_policy=item.feedback_policy,
        tokens_left=tokens_left,
        excused=excused,
    )


def exercise_windows(session: Session, course: Course, user: User, now: datetime) -> list[ExerciseWindow]:
    """Every exercise of ``course`` as ``user`` sees it at ``now`` (learners: released ones only,
    with their extension, attempts, tokens and excuses), in the set's order."""
    excused = excused_exercises(session, course, user)
    return [
        window(item, course, now, tokens_left(session, course, user, item, now), item.exercise in excused)
        for item in sets.listing(session, course, user, now)
    ]


def exercise_window(
    session: Session, course: Course, user: User, exercise: str, now: datetime
) -> ExerciseWindow | None:
    """One exercise's window as :func:`exercise_windows` lists it for ``user`` (None where that
    list leaves it out): what ``POST /submissions?late=ask`` reads to tell a late submission."""
    item = sets.listed(session, course, user, exercise, now)
    if item is None:
        return None
    excused = exercise in excused_exercises(session, course, user)
    return window(item, course, now, tokens_left(session, course, user, item, now), excused)
