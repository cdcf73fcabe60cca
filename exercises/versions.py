"""Which version of an exercise, and of the grader, produced a verdict.

Two short hashes, stored on every verdict so that a fix to an exercise or to the grader tells
which scores are stale (regrade) and which exercises a course may publish (the pack gate):

- :func:`content_version`: what decides an exercise's scores. Every file of the exercise's
  folder but its starter (the spec, the reference, the checks with their weights, the faulty
  reference and its mistakes; a pack exercise's extra modules too), plus the shared trusted
  modules its checks read (the per-dtype tolerances of ``compare.py`` and the contract checks of
  ``common.py``). A starter's wording is not graded, so editing it changes nothing.
- :func:`grader_version`: the judge, the harness and the jail: the code that turns a source
  into a verdict, the same for every exercise.

Both hash file bytes, not behaviour: a change that turns out to grade nothing differently still
counts as a new version, and a regrade preview then shows that nothing moved. That errs on the
side of telling staff, never of hiding a change.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # only a type here: importing this module must not import torch (server.models reads it)
    from exercises.framework import Exercise

#: Length of a version in hex digits: 48 bits, unambiguous across a catalogue's history.
VERSION_LENGTH = 12

#: Stored on verdicts from before versions were recorded.
UNKNOWN_VERSION = "unknown"

_EXERCISES_DIR = Path(__file__).resolve().parent
_SANDBOX_DIR = _EXERCISES_DIR.parent / "sandbox"

#: Trusted modules whose contents decide the scores of every exercise's checks.
_SHARED_CONTENT = ("compare.py", "common.py")

#: The judge, harness and jail: every module of ``sandbox/`` and these of ``exercises/``.
_GRADER_MODULES = (
    "judge.py",
    "measurement.py",
    "scoring.py",
    "evidence.py",
    "framework.py",
    "outcomes.py",
    "diagnosis.py",
    "report.py",
    "mistakes.py",
    "feedback.py",
)


def _digest(files: Iterable[tuple[str, Path]]) -> str:
    """A hash of (name, bytes) pairs in the order given; names keep two files from trading places."""
    h = hashlib.sha256()
    for name, path in files:
        data = path.read_bytes()
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()[:VERSION_LENGTH]


def _exercise_files(folder: Path) -> list[tuple[str, Path]]:
    """The folder's Python files that decide scores, by path relative to the folder, sorted."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        rel = path.relative_to(folder).as_posix()
        if rel == "starter.py" or "__pycache__" in path.parts:
            continue
        found.append((rel, path))
    return found


class Versioned(Protocol):
    """What a content version is of: an exercise's slug and folder. A loaded
    :class:`~exercises.framework.Exercise`, or the catalogue's index entry for it
    (``exercises.index``), which names the same folder without importing it (nor torch)."""

    @property
    def slug(self) -> str: ...

    @property
    def folder(self) -> str: ...


_content_versions: dict[tuple[str, str], str] = {}

#: Joins a slug and a stored version in an exercise reference (``"scaled-diff@3f2a9c01b7d4"``).
_AT = "@"


def exercise_ref(slug: str, version: str | None) -> str:
    """What a worker is told to grade with: the slug alone (the loaded exercise), or the slug and
    the stored version a course's set serves (``server.catalog.versions``)."""
    return f"{slug}{_AT}{version}" if version else slug


def split_ref(ref: str) -> tuple[str, str | None]:
    """``(slug, version or None)`` of :func:`exercise_ref`'s string."""
    slug, _, version = ref.partition(_AT)
    return slug, version or None


def pin_content_version(exercise: Exercise, version: str) -> None:
    """Record that ``exercise`` (loaded from a stored version) is content version ``version``,
    whatever the shared modules hash to now: its verdicts name the version that was verified."""
    _content_versions[(exercise.slug, exercise.folder)] = version


def content_version(exercise: Versioned) -> str:
    """The exercise's content version (see the module docstring); stable across processes.

    Read once per process and exercise: the version describes the code this process loaded,
    which an edit of the files on disk does not change until the service restarts.
    """
    key = (exercise.slug, exercise.folder)
    if key not in _content_versions:
        folder = Path(exercise.folder)
        files = [(f"{exercise.slug}/{rel}", path) for rel, path in _exercise_files(folder)]
        files += [(f"shared/{name}", _EXERCISES_DIR / name) for name in _SHARED_CONTENT]
        _content_versions[key] = _digest(files)
    return _content_versions[key]


@functools.cache
def grader_version() -> str:
    """The grader's version: the judge's, harness's and jail's code (cached: it cannot change
    while a process runs)."""
    files = [(f"exercises/{name}", _EXERCISES_DIR / name) for name in _GRADER_MODULES]
    files += [(f"sandbox/{p.name}", p) for p in sorted(_SANDBOX_DIR.glob("*.py"))]
    return _digest(files)
