"""Grade a file with the real judge and shape the result as ``GET /submissions/{id}`` does."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from exercises.feedback import for_learner, rename_in_text
from exercises.judge import GradeReport, Judge
from server.submissions.schemas import CheckPublic, Feedback

SOURCES = Path(__file__).parent / "sources"


def as_submission(report: GradeReport, filename: str, *, diagnosis: list[dict[str, Any]] | None = None,
                  submission_id: int = 42, exercise: str = "gae") -> dict[str, Any]:
    """The wire form of a done submission holding ``report`` (no timings: they vary per run)."""
    feedback = for_learner(report.feedback, filename, diagnosis)
    checks = [CheckPublic(**{**asdict(c), "message": rename_in_text(c.message, filename)}).model_dump()
              for c in report.checks]
    for check in checks:
        check.pop("hidden", None)
    return {
        "id": submission_id, "exercise": exercise, "user": "ada", "status": "done",
        "verdict": report.verdict, "score": report.score, "message": rename_in_text(report.message, filename),
        "checks": checks, "stdout": "", "stderr": "", "timings": {}, "peak_memory_bytes": None,
        "cpu_seconds": None, "filename": filename,
        "feedback": Feedback.model_validate(feedback).model_dump() if feedback else None,
    }


def grade_file(judge: Judge, name: str, exercise: str = "gae", seed: int = 7) -> dict[str, Any]:
    """Grade ``sources/<name>.py`` for ``exercise`` and return its submission dict."""
    source = (SOURCES / f"{name}.py").read_text()
    return as_submission(judge.grade(exercise, source, seed), f"{name}.py", exercise=exercise)
