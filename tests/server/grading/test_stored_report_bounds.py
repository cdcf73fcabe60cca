"""Everything stored from a grade report is capped and clean (issue 10, class 5), on SQLite
and on PostgreSQL: NUL bytes, lone surrogates, a 10 MB check message, a huge or hostile
``timings`` dict. Before the fix a NUL made PostgreSQL refuse the row (internal_error) and a
150 MB check message was stored whole.
"""

from __future__ import annotations

import math

from sqlalchemy import func, select

from exercises.report import CheckOutcome
from server.config import Settings
from server.grading.sanitize import MAX_CHECKS, MAX_TIMINGS, MESSAGE_BYTES, TIMING_KEY_CHARS, clean_text
from server.models import BestScore, CheckResult, Submission
from tests.server.conftest import StartApi
from tests.server.fakes import FakeGrader, FakeReport

TEN_MB = 10 * 1024 * 1024
OUTPUT_CAP = 2048
# The cap plus the short note saying what was cut.
NOTE_ALLOWANCE = 100


def _stored_lengths(api, submission_id: int) -> tuple[int, int, int, list[int]]:  # type: ignore[no-untyped-def]
    """Lengths as the database itself reports them (characters), not as the API shows them."""
    with api.state.session_factory() as session:
        row = session.execute(
            select(func.length(Submission.message), func.length(Submission.stdout), func.length(Submission.stderr))
            .where(Submission.id == submission_id)
        ).one()
        checks = list(
            session.scalars(
                select(func.length(CheckResult.message)).where(CheckResult.submission_id == submission_id)
            )
        )
    return row[0], row[1], row[2], checks


def test_nul_surrogates_and_a_10_mb_message_are_stored_capped_and_readable(
    start_api: StartApi, settings: Settings
) -> None:
    hostile = "tensor([" + "0.1234, " * (TEN_MB // 8) + "])"  # a check message formatting a whole tensor
    report = FakeReport(
        message="2 of 3 checks passed \x00 \ud800",
        stdout="before\x00after \udcff end\n" * 10_000,
        stderr="err\x00" + "e" * 100_000,
        checks=[
            CheckOutcome("value", 50, True, "ok \x00"),
            CheckOutcome("gradient", 25, False, hostile, "mistake \ud83d text\x00" * 1000,
                         check_id="actor-loss/gradient\x00", mistake_id="actor-loss/" + "x" * 10_000),
            CheckOutcome("clip", 25, True, "fine", check_id="actor-loss/clip"),
        ],
        timings={"jail\x00start\ud800": 0.5},
    )
    api = start_api(
        settings=settings.model_copy(update={"OUTPUT_BYTES": OUTPUT_CAP}),
        grader_factory=FakeGrader(report).factory,
    )
    headers = api.user("alice")
    done = api.wait_done(headers, api.submit(headers).json()["id"])

    assert done["verdict"] == "graded", done["message"]  # not internal_error: the row was accepted
    assert done["score"] == 75.0
    assert done["message"] == "2 of 3 checks passed \\x00 \ufffd"
    value, gradient, clip = done["checks"]
    assert value["message"] == "ok \\x00"
    assert gradient["message"].startswith("tensor([0.1234, 0.1234")
    kept = gradient["message"].rsplit(" [... ", 1)[0]
    assert gradient["message"] == kept + f" [... {len(hostile) - len(kept)} characters cut]"
    assert len(gradient["message"].encode()) <= MESSAGE_BYTES  # the note included
    assert "\x00" not in gradient["mistake_title"] and "\\x00" in gradient["mistake_title"]
    assert "\ufffd" in gradient["mistake_title"]
    assert len(gradient["mistake_title"].encode()) <= MESSAGE_BYTES + NOTE_ALLOWANCE
    assert gradient["misconception"] == gradient["mistake_title"]  # the old name, deprecated
    assert clip == {"name": "clip", "weight": 25.0, "passed": True, "message": "fine", "mistake_title": None,
                    "check_id": "actor-loss/clip", "mistake_id": None, "misconception": None}
    # An id is stored whole or not at all: cut or escaped, it would count as another check.
    assert (gradient["check_id"], gradient["mistake_id"]) == (None, None)
    assert done["stdout"].startswith("before\\x00after \ufffd end\n")
    assert len(done["stdout"].encode()) <= OUTPUT_CAP + NOTE_ALLOWANCE
    assert done["stderr"].startswith("err\\x00eee")
    assert len(done["stderr"].encode()) <= OUTPUT_CAP + NOTE_ALLOWANCE
    assert done["timings"]["jail\\x00start\ufffd"] == 0.5

    message, stdout, stderr, checks = _stored_lengths(api, done["id"])
    assert message < 100
    assert stdout <= OUTPUT_CAP + NOTE_ALLOWANCE and stderr <= OUTPUT_CAP + NOTE_ALLOWANCE
    assert max(checks) <= MESSAGE_BYTES + NOTE_ALLOWANCE


def test_timings_keep_only_a_bounded_number_of_finite_numbers(start_api: StartApi) -> None:
    timings = {f"t{i}": float(i) for i in range(10_000)}
    timings = {"nan": math.nan, "inf": math.inf, "text": "1.0", "flag": True, "k" * 10_000: 1.0, **timings}
    api = start_api(grader_factory=FakeGrader(FakeReport(timings=timings)).factory)
    headers = api.user("alice")
    stored = api.wait_done(headers, api.submit(headers).json()["id"])["timings"]
    assert len(stored) <= MAX_TIMINGS
    assert all(isinstance(v, float) and math.isfinite(v) for v in stored.values())
    assert all(len(k) <= TIMING_KEY_CHARS for k in stored)
    assert {"nan", "inf", "text", "flag"}.isdisjoint(stored)
    assert "k" * TIMING_KEY_CHARS in stored
    # The server's own measurements always fit, however many the report sent.
    assert {"queue_seconds", "grade_seconds"} <= set(stored)


def test_numbers_out_of_range_are_not_stored(start_api: StartApi) -> None:
    report = FakeReport(score=math.nan, cpu_seconds=-math.inf, peak_memory_bytes=2**80)
    api = start_api(grader_factory=FakeGrader(report).factory)
    headers = api.user("alice")
    done = api.wait_done(headers, api.submit(headers).json()["id"])
    assert done["verdict"] == "graded"
    assert (done["score"], done["cpu_seconds"], done["peak_memory_bytes"]) == (None, None, None)


def test_only_a_bounded_number_of_checks_is_stored(start_api: StartApi) -> None:
    checks = [CheckOutcome(f"c{i}", 1, True, "ok") for i in range(MAX_CHECKS * 10)]
    api = start_api(grader_factory=FakeGrader(FakeReport(checks=checks)).factory)
    headers = api.user("alice")
    done = api.wait_done(headers, api.submit(headers).json()["id"])
    assert len(done["checks"]) == MAX_CHECKS
    assert done["message"].endswith(f"[only the first {MAX_CHECKS} checks are stored]")


def test_internal_error_output_is_capped_and_never_counts(start_api: StartApi, settings: Settings) -> None:
    """A run the judge calls internal_error stores its output capped and clean, and neither
    counts as an attempt nor lowers the best score."""
    graded = FakeGrader(FakeReport(score=90.0))
    failing = FakeGrader(FakeReport(verdict="internal_error", score=None, stdout="x\x00" * TEN_MB, checks=[]))
    capped = settings.model_copy(update={"OUTPUT_BYTES": OUTPUT_CAP})
    api = start_api(settings=capped, grader_factory=graded.factory)
    headers = api.user("alice")
    api.wait_done(headers, api.submit(headers).json()["id"])
    api.client.__exit__(None, None, None)  # the same database, now graded by the failing judge
    api = start_api(settings=capped, grader_factory=failing.factory)
    done = api.wait_done(headers, api.submit(headers, source="def f():\n    return 2\n").json()["id"])

    assert done["verdict"] == "internal_error"
    assert done["stdout"].startswith("x\\x00x\\x00")
    assert len(done["stdout"].encode()) <= OUTPUT_CAP + NOTE_ALLOWANCE
    with api.state.session_factory() as session:
        best = session.scalars(select(BestScore)).one()
    assert (best.best_score, best.attempts) == (90.0, 1)


def test_clean_text_does_work_proportional_to_the_cap() -> None:
    """A 100 MB text is cut by slicing first: the result is bounded and exact at the edges."""
    huge = "é" * (100 * 1024 * 1024)
    cut = clean_text(huge, 62)  # 31 bytes of note leave 31: 15 two-byte characters, never half of one
    assert cut == "é" * 15 + f" [... {len(huge) - 15} characters cut]" and len(cut.encode()) == 61
    assert clean_text(huge, 5) == "éé"  # no room for a note: the cut alone
    assert clean_text("short", 100) == "short"
    assert clean_text(None, 10) == ""
    assert clean_text("a\x00b", 100) == "a\\x00b"
