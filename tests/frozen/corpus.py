"""A frozen corpus of submissions and what the real judge says about each (issue 21).

``sources/<slug>/<name>.py`` are files frozen once: every exercise's reference, starter and
mutants (each mutant's submittable source as it was when the corpus was made), and under
``sources/feedback/`` the feedback test suite's files (graded for `gae`). The corpus does not
follow later edits of ``mutants.py`` or ``faulty.py``: it holds the judge to what it said
about these exact files.

``expected/<slug>.json`` is what the judge said, through the real jail at a fixed secret and
seed: verdict, score, message, every check result, the named mistakes and the feedback data.
Timings, stdout/stderr and peak memory vary per run and are left out; so are the MiB figures
of a failed memory check's message and how the peak was read (the cgroup's peak varies by a
few pages per run; cgroup v1 or v2 depends on the machine).

A change meant to alter grading regenerates the expected files with
``UPDATE_FROZEN=1 .venv/bin/python -m pytest -q tests/frozen`` and says why in its commit; a
change meant to keep it (a refactoring) must leave them byte-identical.
``.venv/bin/python -m tests.frozen.corpus sources [slug ...]`` writes the sources afresh from
today's catalogue: the named exercises' folders only (a new exercise), or all of them with the
feedback suite's files (only when the corpus itself is renewed).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "sources"
EXPECTED = HERE / "expected"
#: The secret of the corpus's judge: with the seed, it fixes every case.
SECRET = b"frozen-corpus-" + b"x" * 20
#: The seed each corpus file is graded at.
SEED = 23
#: The feedback test suite's files are graded for this exercise (tests/exercises/feedback/conftest.py).
FEEDBACK_EXERCISE = "gae"
FEEDBACK_FOLDER = "feedback"
#: The fields of a check result the corpus holds (fields added later are not part of it).
CHECK_FIELDS = ("name", "weight", "passed", "message", "mistake_title", "hidden")
_MIB = re.compile(r"\d+(?:\.\d+)? MiB")
#: How the peak was read (cgroup-v1, cgroup-v2, rusage) depends on the machine, not the judge.
_MEASURED_BY = re.compile(r"measured by [\w-]+")


def _masked(text: str) -> str:
    return _MEASURED_BY.sub("measured by <source>", _MIB.sub("<n> MiB", text))


@dataclass(frozen=True)
class Entry:
    """One frozen file: the folder it lives in, its name, and the exercise it is graded for."""

    folder: str
    name: str
    exercise: str

    @property
    def path(self) -> Path:
        return SOURCES / self.folder / f"{self.name}.py"


def entries() -> list[Entry]:
    """Every frozen file, by folder then name."""
    from exercises.registry import all_exercises

    slugs = {e.slug for e in all_exercises()}
    found = []
    for folder in sorted(p for p in SOURCES.iterdir() if p.is_dir()):
        exercise = FEEDBACK_EXERCISE if folder.name == FEEDBACK_FOLDER else folder.name
        assert exercise in slugs, f"{folder.name}/ names no exercise"
        found += [Entry(folder.name, f.stem, exercise) for f in sorted(folder.glob("*.py"))]
    return found


def folders() -> list[str]:
    return sorted(p.name for p in SOURCES.iterdir() if p.is_dir())


def _memory_figures_masked(check: dict[str, Any], memory_checks: set[str]) -> dict[str, Any]:
    if check["name"] in memory_checks:
        check["message"] = _masked(check["message"])
    return check


def graded(report: Any, memory_checks: set[str]) -> dict[str, Any]:
    """The parts of a ``GradeReport`` the corpus holds, as JSON-able data."""
    checks = [_memory_figures_masked({k: getattr(c, k) for k in CHECK_FIELDS}, memory_checks)
              for c in report.checks]
    feedback = json.loads(json.dumps(report.feedback)) if report.feedback is not None else None
    if feedback is not None:
        for detail in feedback["summary"]["details"]:
            if detail["check"] in memory_checks:
                detail["text"] = _masked(detail["text"])
    return {"verdict": report.verdict, "score": report.score, "message": report.message, "checks": checks,
            "diagnosis": report.diagnosis, "feedback": feedback}


def grade_folder(judge: Any, folder: str) -> dict[str, Any]:
    """Every file of one folder graded: ``{name: graded data}``."""
    from exercises.registry import get_exercise

    out: dict[str, Any] = {}
    for entry in (e for e in entries() if e.folder == folder):
        exercise = get_exercise(entry.exercise)
        memory_checks = {c.name for c in exercise.checks if c.needs_memory}
        report = judge.grade(entry.exercise, entry.path.read_text(encoding="utf-8"), SEED)
        out[entry.name] = graded(report, memory_checks)
    return out


def dumps(data: dict[str, Any]) -> str:
    """The one text form of expected output (byte-identical means this text)."""
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def write_sources(slugs: list[str] | None = None) -> None:
    """Freeze today's catalogue (the exercises ``slugs`` only, when given) and, without
    ``slugs``, the feedback suite's files into ``sources/``."""
    from exercises.registry import all_exercises

    for exercise in (e for e in all_exercises() if not slugs or e.slug in slugs):
        folder = SOURCES / exercise.slug
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "reference.py").write_text(exercise.reference_source, encoding="utf-8")
        (folder / "starter.py").write_text(exercise.starter, encoding="utf-8")
        for m in exercise.mistakes:
            (folder / f"mutant_{m.key.replace('-', '_')}.py").write_text(m.source(exercise.function_name), encoding="utf-8")
    if slugs:
        return
    feedback = SOURCES / FEEDBACK_FOLDER
    feedback.mkdir(parents=True, exist_ok=True)
    for f in sorted((HERE.parent / "exercises" / "feedback" / "sources").glob("*.py")):
        (feedback / f.name).write_text(f.read_text(encoding="utf-8"), encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:2] == ["sources"]:
        write_sources(sys.argv[2:] or None)
    else:
        sys.exit("usage: python -m tests.frozen.corpus sources [slug ...]")
