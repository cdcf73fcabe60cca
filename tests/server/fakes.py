"""Tiny real objects standing in for the judge where a test needs control over timing or
failure (the real judge is exercised in test_real_judge.py)."""

from __future__ import annotations

import threading
from typing import Any

from exercises.report import CheckOutcome, GradeReport


def FakeReport(**overrides: Any) -> GradeReport:  # noqa: N802 (reads like the class it stands in for)
    """The judge's real report type, filled with plausible values (override any field)."""
    fields: dict[str, Any] = {
        "verdict": "graded",
        "score": 75.0,
        "message": "3 of 4 checks passed.",
        "checks": [
            CheckOutcome("value", 50, True, "ok", check_id="actor-loss/value"),
            CheckOutcome("gradient", 25, True, "ok", check_id="actor-loss/gradient"),
            CheckOutcome("clip", 25, False, "clip boundary wrong", "max instead of min",
                         check_id="actor-loss/clip", mistake_id="actor-loss/max-for-min"),
        ],
        "stdout": "hello from learner\n",
        "stderr": "",
        "timings": {"jail_start": 0.01},
        "peak_memory_bytes": 12345,
        "cpu_seconds": 0.5,
    }
    return GradeReport(**{**fields, **overrides})


class FakeGrader:
    """Callable like ``grade_submission``; can be held closed (``gate``) or made to raise."""

    def __init__(self, report: GradeReport | None = None, *, fail: bool = False, gated: bool = False) -> None:
        self.report = report or FakeReport()
        self.fail = fail
        self.gate = threading.Event()
        if not gated:
            self.gate.set()
        self.calls: list[tuple[str, str, int]] = []
        self.closed = False
        self.started = threading.Event()

    def __call__(self, exercise_slug: str, source: str, submission_id: int) -> GradeReport:
        self.calls.append((exercise_slug, source, submission_id))
        self.started.set()
        self.gate.wait(timeout=30)
        if self.fail:
            raise RuntimeError("jail host exploded")
        return self.report

    def factory(self, _settings: object) -> tuple[FakeGrader, object]:
        """A ``GraderFactory`` returning this grader."""
        return self, self.close

    def close(self) -> None:
        self.closed = True
        self.gate.set()
