"""Exercise lookups, translating the registry's errors into API errors."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from exercises.feedback import suggest
from exercises.registry import UnknownExercise, all_exercises, get_exercise
from server.catalogue.schemas import CheckInfo, ExerciseDetail, ExerciseSummary
from server.errors import ExerciseNotFound


def find_exercise(slug: str, visible: set[str] | None = None, version: str | None = None) -> Any:
    """The registry's exercise for ``slug`` (at a stored ``version``: server.catalogue.versions);
    404 ``ExerciseNotFound`` otherwise, and also when ``visible`` (the slugs the caller may see;
    None: all) leaves it out."""
    try:
        # A caller names a slug; versions are the server's to choose (never ``slug@version``).
        exercise = get_exercise(slug, version) if "@" not in slug else None
    except UnknownExercise:
        exercise = None
    if exercise is None or (visible is not None and slug not in visible):
        raise ExerciseNotFound(not_found_message(slug, visible))
    return exercise


def not_found_message(slug: str, visible: set[str] | None = None) -> str:
    """No such exercise, with a near slug among those the caller may see (never one they may
    not: the suggestion would name an unreleased exercise)."""
    candidates = [e.slug for e in all_exercises() if visible is None or e.slug in visible]
    near = suggest(slug, candidates) if len(slug) <= 64 else None
    hint = f"did you mean {near}? " if near else ""
    return f"No exercise is called {slug[:64]!r}; {hint}`GET /api/v1/exercises` lists them."


@dataclass(frozen=True)
class Indexed:
    """An exercise as a list, a column heading or its versions name it (what its spec says,
    and where it is: the pack and the folder its content version hashes)."""

    slug: str
    title: str
    order: int
    function: str
    pack: str
    folder: str


def catalogue_index() -> list[Indexed]:
    """Every exercise's slug, title, order, function, pack and folder, in course order, without
    loading the catalogue when this process has not (``exercises.index``: its specs read, not
    run, so an admin command that orders a set, titles a gradebook or lists the exercises does
    not import torch); the loaded catalogue's when it is loaded, or when the specs cannot be
    read so."""
    from exercises.index import read_index
    from exercises.registry import loaded_exercises, served_folders

    loaded = loaded_exercises()
    read = read_index(served_folders()) if loaded is None else None
    if read is not None:
        return [Indexed(e.slug, e.title, e.order, e.function_name, e.pack, e.folder) for e in read]
    return sorted(
        (Indexed(e.slug, e.title, e.order, e.function_name, e.pack, e.folder) for e in all_exercises()),
        key=lambda e: (e.order, e.slug),
    )


def list_exercises() -> list[ExerciseSummary]:
    """Every exercise, in course order."""
    return sorted((_summary(e) for e in all_exercises()), key=lambda s: (s.order, s.slug))


def visible_exercises(visible: set[str] | None = None) -> list[ExerciseSummary]:
    """``GET /exercises``: every exercise ``visible`` holds (None: all), in course order."""
    return [e for e in list_exercises() if visible is None or e.slug in visible]


def catalogue_version(summaries: list[ExerciseSummary]) -> str:
    """A short digest of a caller's catalogue as ``GET /exercises`` sends it (its ``ETag``):
    it changes whenever what a client matches a file against changes (an exercise released,
    added, renamed or given another function), so ``ppo-submit`` can keep the catalogue
    between commands and learn from ``POST /submissions?catalogue=`` when it is stale."""
    body = json.dumps([s.model_dump(mode="json") for s in summaries], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(body.encode()).hexdigest()[:20]


def exercise_detail(slug: str, visible: set[str] | None = None, version: str | None = None) -> ExerciseDetail:
    """One exercise with its description, starter and check names (404 unless ``visible``,
    when given, holds it), of a stored ``version``: the one the caller's courses serve, so the
    starter announces the points that grade."""
    exercise = find_exercise(slug, visible, version)
    return ExerciseDetail(
        slug=exercise.slug,
        title=exercise.title,
        function=exercise.function_name,
        summary=exercise.summary,
        description=exercise.description,
        starter=exercise.starter,
        # Hidden checks are listed too (name and weight only) so the weights add up to 100.
        checks=[CheckInfo(name=c.name, weight=c.weight) for c in exercise.checks],
    )


def _summary(exercise: Any) -> ExerciseSummary:
    return ExerciseSummary(
        slug=exercise.slug,
        title=exercise.title,
        function=exercise.function_name,
        summary=exercise.summary,
        order=exercise.order,
    )
