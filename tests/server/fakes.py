"""Tiny real objects standing in for the judge where a test needs control over timing or
failure (the real judge is exercised in test_real_judge.py)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass
class FakeCheck:
    name: str
    weight: float
    passed: bool
    message: str = ""
    misconception: str | None = None
    hidden: bool = False


@dataclass
class FakeReport:
    verdict: str = "graded"
    score: float | None = 75.0
    message: str = "3 of 4 checks passed."
    checks: list[FakeCheck] = field(
        default_factory=lambda: [
            FakeCheck("value", 50, True, "ok"),
            FakeCheck("gradient", 25, True, "ok"),
            FakeCheck("clip", 25, False, "clip boundary wrong", "max instead of min"),
        ]
    )
    stdout: str = "hello from learner\n"
    stderr: str = ""
    timings: dict[str, float] = field(default_factory=lambda: {"jail_start": 0.01})
    peak_memory_bytes: int | None = 12345
    cpu_seconds: float | None = 0.5


class FakeGrader:
    """Callable like ``grade_submission``; can be held closed (``gate``) or made to raise."""

    def __init__(self, report: FakeReport | None = None, *, fail: bool = False, gated: bool = False) -> None:
        self.report = report or FakeReport()
        self.fail = fail
        self.gate = threading.Event()
        if not gated:
            self.gate.set()
        self.calls: list[tuple[str, str, int]] = []
        self.closed = False
        self.started = threading.Event()

    def __call__(self, exercise_slug: str, source: str, submission_id: int) -> FakeReport:
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
