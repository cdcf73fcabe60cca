"""The catalogue: every exercise of every pack (:mod:`exercises.packs`), by slug.

The built-in pack is the ``exercises`` package's own folders; operators add packs through
installed entry points and the folders the service is configured with (recorded in its database
by ``serve``; the server hands them over with :func:`serve_folders`). The catalogue is built once per
process, whole or not at all: a pack that fails to load raises
:class:`~exercises.packs.PackError` and leaves no catalogue behind, so the next call fails the
same way instead of serving half of it.
"""

from __future__ import annotations

import threading

from exercises.framework import Exercise
from exercises.packs import Pack, configured_packs, load_catalogue

_lock = threading.Lock()
_cache: dict[str, Exercise] | None = None
#: The pack folders the service is configured with (:func:`serve_folders`).
_served: list[str] = []


class UnknownExercise(KeyError):
    """No exercise has this slug."""

    def __str__(self) -> str:
        return f"no exercise named {self.args[0]!r}"


def serve_folders(folders: list[str]) -> None:
    """The pack folders the service is configured with, for every later :func:`load` (the
    catalogue is built anew on next use)."""
    global _cache
    with _lock:
        _served[:] = folders
        _cache = None


def served_folders() -> list[str]:
    """The pack folders handed over by :func:`serve_folders`."""
    return list(_served)


def load(extra: list[Pack] | None = None) -> list[Exercise]:
    """Build the catalogue now from the configured packs plus ``extra`` (verify's ``--pack``)
    and use it from here on; :class:`~exercises.packs.PackError` leaves the previous one."""
    global _cache
    with _lock:
        catalogue = load_catalogue(configured_packs(extra or [], _served))
        _cache = catalogue
        return list(catalogue.values())


def _exercises() -> dict[str, Exercise]:
    global _cache
    with _lock:
        if _cache is None:
            _cache = load_catalogue(configured_packs(served=_served))
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


def self_reported_fact(check_id: str) -> str:
    """The self-reported fact the check ``"<slug>/<check>"`` rests on ("" when it has none, or
    the catalogue has no such check: exercises.framework.Check.self_reported)."""
    exercise = _exercise_of(check_id)
    if exercise is None:
        return ""
    return next((c.self_reported for c in exercise.checks if exercise.check_id(c) == check_id), "")


def mistake_title(mistake_id: str) -> str | None:
    """Today's title of the mistake ``"<slug>/<mistake>"``; None when the catalogue has none such."""
    exercise = _exercise_of(mistake_id)
    return next((m.title for m in exercise.mistakes if m.id == mistake_id), None) if exercise else None
