"""Grade a file with the real judge and shape the result as ``GET /submissions/{id}`` does."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from exercises.feedback import for_learner, rename_in_text
from exercises.judge import Judge
from exercises.report import GradeReport
from server.submissions.schemas import CheckPublic, Feedback

SOURCES = Path(__file__).parent / "sources"


def as_submission(report: GradeReport, filename: str, *, diagnosis: list[dict[str, Any]] | None = None,
                  submission_id: int = 42, exercise: str = "gae") -> dict[str, Any]:
    """The wire form of a done submission holding ``report`` (no timings: they vary per run)."""
    # as server/grading/persistence.py does: the report's own diagnosis unless one is given
    feedback = for_learner(report.feedback, filename, diagnosis or getattr(report, "diagnosis", None))
    checks = [CheckPublic(**{**asdict(c), "message": rename_in_text(c.message, filename)}).model_dump()
              for c in report.checks]
    for check in checks:
        check.pop("hidden", None)
    return {
        "id": submission_id, "exercise": exercise, "user": "ada", "status": "done",
        "verdict": report.verdict, "score": report.score, "message": rename_in_text(report.message, filename),
        "checks": checks, "stdout": "", "stderr": "", "timings": {}, "peak_memory_bytes": None,
        "cpu_seconds": None, "filename": filename, "queue_position": None,
        "course": "default", "late": False, "late_seconds": None, "penalty_percent": 0.0,
        "counted_score": report.score,
        "created_at": "2026-11-30T12:00:00Z", "started_at": "2026-11-30T12:00:01Z",
        "finished_at": "2026-11-30T12:00:03Z",
        "feedback": Feedback.model_validate(feedback).model_dump() if feedback else None,
    }


def grade_file(judge: Judge, name: str, exercise: str = "gae", seed: int = 7) -> GradeReport:
    """Grade ``sources/<name>.py`` for ``exercise``."""
    return judge.grade(exercise, (SOURCES / f"{name}.py").read_text(), seed)


#: A diagnosis in the shape the judge's ``GradeReport.diagnosis`` takes (issue 11), for the
#: two-mistake file: what the summary shows once the judge names both mistakes.
TWO_MISTAKES_DIAGNOSIS = [
    {"mistake_id": "gamma missing from the TD error: delta_t = r_t + V_{t+1} - V_t instead of "
                      "r_t + gamma * V_{t+1} - V_t",
     "title": "gamma is missing from the TD error",
     "fix": "delta_t = r_t + gamma * V_{t+1} - V_t",
     "checks": ["advantages and returns with non-default gamma and lam", "mask=None: every position valid"]},
    {"mistake_id": "decay without gamma: A_t = delta_t + lam * A_{t+1} instead of delta_t + gamma * lam * A_{t+1}",
     "title": "the recursion decays by lam alone",
     "fix": "A_t = delta_t + gamma * lam * A_{t+1}",
     "checks": ["V_{t+1} is 0 after the last valid token (no bootstrapping from padding)",
                "length-1 rows and a row with no valid token"]},
]
