"""The score that counts as pure functions: the late-penalty rules at each boundary, then
``score_that_counts`` (extension, override, excuse) and ``describe``, with no database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import create_engine, func, select, text

from server.courses.best_scores import _ATTEMPT
from server.courses.counted import (
    Correction,
    CountingSubmission,
    counts_as_attempt,
    describe,
    is_attempt,
    late_by,
    score_that_counts,
    submission_counted,
    uses_an_attempt,
)
from server.courses.policy import Rules
from server.models import Submission, Verdict

DUE = datetime(2026, 12, 11, 16, 0, tzinfo=UTC)
SECOND, HOUR, DAY = timedelta(seconds=1), timedelta(hours=1), timedelta(days=1)
DAILY = Rules(None, DUE, DUE + 2 * DAY, penalty_percent=10, penalty_unit="day")


@pytest.mark.parametrize(
    ("at", "late", "penalty"),
    [
        (DUE - SECOND, None, 0.0),  # on time
        (DUE, None, 0.0),  # at the due date: still on time
        (DUE + SECOND, 1, 10.0),  # one second late costs a whole started day
        (DUE + DAY, 86_400, 10.0),  # exactly one day late: one day
        (DUE + DAY + SECOND, 86_401, 20.0),  # the second day has started
        (DUE + 11 * DAY, 11 * 86_400, 100.0),  # capped at 100
    ],
)
def test_daily_penalty_per_started_day(at: datetime, late: int | None, penalty: float) -> None:
    assert DAILY.late_seconds(at) == late
    assert DAILY.penalty_for(DAILY.late_seconds(at)) == penalty


def test_hourly_penalty_and_flag_only_policy() -> None:
    hourly = Rules(None, DUE, None, penalty_percent=5, penalty_unit="hour")
    assert hourly.penalty_for(hourly.late_seconds(DUE + HOUR + SECOND)) == 10.0
    flag_only = Rules(None, DUE, None)
    assert (flag_only.late_seconds(DUE + DAY), flag_only.penalty_for(86_400)) == (86_400, 0.0)


def test_an_extension_moves_the_due_date_and_a_covered_submission_is_on_time() -> None:
    extended = DAILY.with_extension(DUE + 3 * DAY)
    assert extended.extended and extended.close_at == DUE + 3 * DAY  # the close moved with it
    assert extended.late_seconds(DUE + 2 * DAY) is None
    assert extended.penalty_for(extended.late_seconds(DUE + 3 * DAY + SECOND)) == 10.0
    assert DAILY.with_extension(DUE - DAY) is DAILY  # an earlier "extension" changes nothing


def test_submission_counted_takes_the_penalty_off_the_raw_score() -> None:
    assert submission_counted(75.0, 10.0) == 67.5
    assert submission_counted(75.0, None) == 75.0
    assert submission_counted(None, 10.0) is None
    assert submission_counted(80.0, 150.0) == 0.0  # never below 0


RUN = CountingSubmission(submission_id=7, raw=100.0, late_seconds=3_600, penalty_percent=10.0, submitted_at=DUE + HOUR)
BY = datetime(2026, 12, 20, 9, 0, tzinfo=UTC)


def test_late_run_counts_after_its_penalty() -> None:
    score = score_that_counts(1, "gae", raw_best=100.0, counting=RUN, attempts=2, reached_at=DUE + HOUR)
    assert (score.counted, score.late, score.penalty_percent, score.solved, score.points) == (90.0, True, 10.0, False, 90.0)
    assert describe(score) == "90 (raw 100, late 1h: -10%)"


def test_override_replaces_the_score_and_clears_the_late_mark() -> None:
    override = Correction(1, 85.0, "checked by hand", "prof", BY)
    score = score_that_counts(1, "gae", raw_best=100.0, counting=RUN, attempts=2, override=override, reached_at=DUE)
    assert (score.counted, score.late, score.penalty_percent, score.reached_at) == (85.0, False, 0.0, BY)
    assert describe(score) == "85 (override by prof: checked by hand)"
    full = score_that_counts(1, "gae", raw_best=None, counting=None, attempts=0,
                             override=Correction(2, 100.0, "oral exam", "prof", BY))
    assert (full.counted, full.solved, full.solved_at) == (100.0, True, BY)


def test_excuse_takes_the_exercise_out_whatever_else_holds() -> None:
    excuse = Correction(3, None, "illness", "prof", BY)
    override = Correction(1, 85.0, "checked by hand", "prof", BY)
    score = score_that_counts(1, "gae", raw_best=100.0, counting=RUN, attempts=2, override=override, excuse=excuse,
                              solved_at=DUE)
    assert (score.counted, score.excused, score.solved, score.points, score.solved_at) == (None, True, False, 0.0, None)
    assert describe(score) == "excused (by prof: illness)"


def test_attempts_without_a_graded_run_count_zero_and_no_attempt_counts_nothing() -> None:
    assert score_that_counts(1, "gae", raw_best=None, counting=None, attempts=3).counted == 0.0
    never = score_that_counts(1, "gae", raw_best=None, counting=None, attempts=0)
    assert (never.counted, describe(never), describe(None)) == (None, "-", "-")


def test_an_extension_is_named_in_the_course_zone() -> None:
    on_time = CountingSubmission(8, 100.0, None, 0.0, DUE + HOUR)
    score = score_that_counts(1, "gae", raw_best=100.0, counting=on_time, attempts=1, extended_to=DUE + 2 * DAY)
    assert describe(score, "Europe/Paris") == "100 (extended to 2026-12-13 17:00 CET)"


@pytest.mark.parametrize(("seconds", "text"), [(1, "1m"), (60, "1m"), (61, "2m"), (3_600, "1h"), (3_660, "1h 1m"),
                                                (86_400, "1d"), (90_000, "1d 1h")])
def test_late_by_reads_in_days_hours_minutes(seconds: int, text: str) -> None:
    assert late_by(seconds) == text



@pytest.mark.parametrize("verdict", [None, *(v.value for v in Verdict)])
def test_one_attempt_rule_in_python_and_in_sql(verdict: str | None) -> None:
    """``is_attempt`` and the SQL every board, statistic, regrade and ``best_scores`` filters with
    say the same of every verdict; the attempt limit's rule differs only for unfinished rows."""
    engine = create_engine("sqlite://")
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE submissions (verdict VARCHAR)"))
        conn.execute(text("INSERT INTO submissions (verdict) VALUES (:v)"), {"v": verdict})
        counted = conn.scalar(select(func.count()).select_from(Submission).where(counts_as_attempt()))
        backfill = conn.scalar(text(f"SELECT count(*) FROM submissions WHERE {_ATTEMPT}"))
        limited = conn.scalar(select(func.count()).select_from(Submission).where(uses_an_attempt()))
    assert bool(counted) is bool(backfill) is is_attempt(verdict)
    assert bool(limited) is (verdict != Verdict.INTERNAL_ERROR.value)
