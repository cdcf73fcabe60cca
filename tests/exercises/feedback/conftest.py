"""One real judge (real jail) for the feedback tests, and the submissions it grades."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from exercises.judge import Judge

from .grading import TWO_MISTAKES_DIAGNOSIS, as_submission, grade_file

#: The files of tests/exercises/feedback/sources graded for `gae`.
FILES = ("correct", "one_mistake", "two_mistakes", "typo", "wrong_name", "syntax")
#: What the snapshots cover: each file, and the two-mistake file with a diagnosis.
SNAPSHOT_FILES = (*FILES, "two_mistakes_diagnosed")


@pytest.fixture(scope="session")
def judge() -> Iterator[Judge]:
    j = Judge(secret=b"test-secret-" + b"x" * 20, pool_size=1)
    yield j
    j.close()


@pytest.fixture(scope="session")
def graded(judge: Judge) -> dict[str, dict[str, Any]]:
    """Each file graded once, as ``GET /submissions/{id}`` would show it."""
    reports = {name: grade_file(judge, name) for name in FILES}
    out = {name: as_submission(report, f"{name}.py") for name, report in reports.items()}
    out["two_mistakes_diagnosed"] = as_submission(reports["two_mistakes"], "two_mistakes.py",
                                                  diagnosis=TWO_MISTAKES_DIAGNOSIS)
    return out
