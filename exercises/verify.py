"""Self-check of the catalogue: does each exercise grade its reference 100 and catch its mistakes?

``ppo-grader exercises verify`` prints this for instructors who add their own exercises.
Every submission goes through the real jail, exactly as a learner's would.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from exercises.judge import Judge
from exercises.registry import Exercise


@dataclass
class MistakeRow:
    """One known mistake's file graded: its score, whether a check failed, whether one named it."""

    id: str
    title: str
    score: float | None
    killed: bool
    named: bool


@dataclass
class VerifyRow:
    """One exercise's verification."""

    slug: str
    checks: int
    reference_score: float | None
    starter_score: float | None
    mistakes: list[MistakeRow] = field(default_factory=list)

    @property
    def killed(self) -> int:
        return sum(m.killed for m in self.mistakes)

    @property
    def ok(self) -> bool:
        """Reference 100, starter below 100, every mistake caught and named."""
        return (self.reference_score == 100 and self.starter_score is not None and self.starter_score < 100
                and all(m.killed and m.named for m in self.mistakes))


def verify_exercise(judge: Judge, exercise: Exercise, seed: int = 1) -> VerifyRow:
    """Grade the reference, the starter and every known mistake of one exercise."""
    ref = judge.grade(exercise.slug, exercise.reference_source, seed)
    starter = judge.grade(exercise.slug, exercise.starter, seed)
    row = VerifyRow(exercise.slug, len(exercise.checks), ref.score, starter.score)
    for m in exercise.mistakes:
        report = judge.grade(exercise.slug, m.source(exercise.function_name), seed)
        failed = [c for c in report.checks if not c.passed]
        killed = report.verdict != "graded" or bool(failed)
        named = any(c.mistake_id == m.id for c in failed)
        row.mistakes.append(MistakeRow(m.id, m.title, report.score, killed, named))
    return row
