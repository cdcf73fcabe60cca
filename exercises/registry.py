"""Discovers exercises: every package ``exercises/<name>/`` with a ``spec.py`` is one.

Adding an exercise means adding its folder; nothing else is registered by hand.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from pathlib import Path

from exercises.framework import Exercise

_PACKAGE_DIR = Path(__file__).resolve().parent
_lock = threading.Lock()
_cache: dict[str, Exercise] | None = None


class UnknownExercise(KeyError):
    """No exercise has this slug."""

    def __str__(self) -> str:
        return f"no exercise named {self.args[0]!r}"


#: The files every exercise folder holds (see :mod:`exercises.framework`).
ROLE_FILES = ("spec.py", "starter.py", "reference.py", "checks.py", "mutants.py")


class BrokenExercise(RuntimeError):
    """An exercise folder is incomplete or fails to load."""


def load_exercise(package: str) -> Exercise:
    """Import one exercise package (e.g. ``exercises.actor_loss``) and assemble it."""
    folder = _PACKAGE_DIR / package.rsplit(".", 1)[-1]
    missing = [f for f in ROLE_FILES if not (folder / f).exists()]
    if missing:
        raise BrokenExercise(f"exercise folder {folder.name}/ lacks {', '.join(missing)}")
    spec_mod = importlib.import_module(f"{package}.spec")
    checks_mod = importlib.import_module(f"{package}.checks")
    mutants_mod = importlib.import_module(f"{package}.mutants")
    reference_mod = importlib.import_module(f"{package}.reference")
    return Exercise.from_modules(
        str(folder), spec_mod, checks_mod, mutants_mod, reference_mod,
        starter=(folder / "starter.py").read_text(encoding="utf-8"),
        reference_source=(folder / "reference.py").read_text(encoding="utf-8"),
    )


def _discover() -> dict[str, Exercise]:
    found: dict[str, Exercise] = {}
    for info in pkgutil.iter_modules([str(_PACKAGE_DIR)]):
        if info.ispkg and (_PACKAGE_DIR / info.name / "spec.py").exists():
            ex = load_exercise(f"exercises.{info.name}")
            if ex.slug in found:
                raise ValueError(f"two exercises share the slug {ex.slug!r}")
            found[ex.slug] = ex
    return dict(sorted(found.items(), key=lambda kv: (kv[1].order, kv[0])))


def _exercises() -> dict[str, Exercise]:
    global _cache
    with _lock:
        if _cache is None:
            _cache = _discover()
        return _cache


def all_exercises() -> list[Exercise]:
    """Every exercise, in catalogue order."""
    return list(_exercises().values())


def get_exercise(slug: str) -> Exercise:
    """The exercise with this slug, or :class:`UnknownExercise`."""
    try:
        return _exercises()[slug]
    except KeyError:
        raise UnknownExercise(slug) from None


def _exercise_of(item_id: str) -> Exercise | None:
    slug = item_id.split("/", 1)[0]
    return _exercises().get(slug)


def check_name(check_id: str) -> str | None:
    """Today's sentence of the check ``"<slug>/<check>"``; None when the catalogue has none such."""
    exercise = _exercise_of(check_id)
    return next((c.name for c in exercise.checks if exercise.check_id(c) == check_id), None) if exercise else None


def mistake_title(mistake_id: str) -> str | None:
    """Today's title of the mistake ``"<slug>/<mistake>"``; None when the catalogue has none such."""
    exercise = _exercise_of(mistake_id)
    return next((m.title for m in exercise.mistakes if m.id == mistake_id), None) if exercise else None
