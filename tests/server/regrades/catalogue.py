"""A changed copy of a real exercise that the judge really grades with: the folder is copied
to a temporary place with its reference edited (the "wrong reference" an instructor later
fixes), and the catalogue's entry is swapped for one built from that folder. Its content
version is the hash of the copied folder, so it differs from the real exercise's.

``PPO_GRADER_TEST_EXERCISE_COPY=<folder>`` makes ``python -m tests.server.regrades.catalogue worker ...``
a ``ppo-grader`` whose catalogue has that copy (the procrastinate workers of the tests).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from exercises import registry
from exercises.framework import Exercise
from exercises.packs import BUILTIN, builtin_pack, load_exercise

SLUG = "kl-penalty"
PACKAGE = "exercises.kl_penalty"
FOLDER = Path(registry.__file__).resolve().parent / "kl_penalty"
#: The wrong reference: k2 without its 0.5 (the learners' known mistake "k2-missing-half").
RIGHT, WRONG = "return 0.5 * log_ratio**2", "return log_ratio**2"


def write_wrong_copy(where: Path) -> Path:
    """Copy kl-penalty's folder to ``where`` with the wrong reference; returns the folder."""
    folder = where / "kl_penalty_wrong"
    shutil.copytree(FOLDER, folder, ignore=shutil.ignore_patterns("__pycache__"))
    reference = folder / "reference.py"
    text = reference.read_text()
    assert RIGHT in text
    reference.write_text(text.replace(RIGHT, WRONG))
    return folder


def load_copy(folder: Path) -> Exercise:
    """The exercise as the copied folder defines it (its own reference module; the real spec,
    checks and mutants, which the copy leaves as they are)."""
    spec = importlib.util.spec_from_file_location(f"_regrade_copy_{abs(hash(folder))}", folder / "reference.py")
    assert spec is not None and spec.loader is not None
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    modules = [importlib.import_module(f"{PACKAGE}.{name}") for name in ("spec", "checks", "mutants")]
    exercise = Exercise.from_modules(
        str(folder), modules[0], modules[1], modules[2], reference,
        starter=(folder / "starter.py").read_text(), reference_source=(folder / "reference.py").read_text(),
    )
    exercise.pack = BUILTIN  # it stands in for the built-in kl-penalty: graded by the code loaded, no stored version
    return exercise


def install(exercise: Exercise | None) -> None:
    """Put ``exercise`` in the catalogue in place of its slug's entry (None: the real one)."""
    registry.all_exercises()  # discovered first
    assert registry._cache is not None
    registry._cache[SLUG] = exercise if exercise is not None else load_exercise(builtin_pack(), FOLDER)


@contextmanager
def wrong_reference(where: Path) -> Iterator[Path]:
    """The catalogue grades kl-penalty with the wrong reference inside the block."""
    folder = write_wrong_copy(where)
    install(load_copy(folder))
    try:
        yield folder
    finally:
        install(None)


def _load_with_copy(folder: Path) -> None:
    """``registry.load`` (which ``ppo-grader worker`` calls at start), then the copy in place."""
    load = registry.load

    def load_then_swap(*args: object, **kwargs: object) -> list[Exercise]:
        load(*args, **kwargs)  # type: ignore[arg-type]
        install(load_copy(folder))
        return registry.all_exercises()

    registry.load = load_then_swap  # type: ignore[assignment]


if __name__ == "__main__":  # a ppo-grader process whose catalogue has the copy
    copy = os.environ.get("PPO_GRADER_TEST_EXERCISE_COPY")
    if copy:
        _load_with_copy(Path(copy))
    from server.cli import app

    sys.argv = ["ppo-grader", *sys.argv[1:]]
    app()
