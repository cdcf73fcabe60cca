"""Exercise lookups, translating the registry's errors into API errors."""

from __future__ import annotations

from typing import Any

from exercises.feedback import suggest
from exercises.registry import UnknownExercise, all_exercises, get_exercise
from server.catalog.schemas import CheckInfo, ExerciseDetail, ExerciseSummary
from server.errors import ExerciseNotFound


def find_exercise(slug: str, version: str | None = None) -> Any:
    """The registry's exercise for ``slug`` (at a stored ``version``); 404 ``ExerciseNotFound`` otherwise."""
    try:
        if "@" in slug:  # a caller names a slug; versions are the server's to choose
            raise UnknownExercise(slug)
        return get_exercise(slug, version)
    except UnknownExercise:
        near = suggest(slug, (e.slug for e in all_exercises())) if len(slug) <= 64 else None
        hint = f"did you mean {near}? " if near else ""
        raise ExerciseNotFound(
            f"No exercise is called {slug[:64]!r}; {hint}`GET /api/v1/exercises` lists them."
        ) from None


def list_exercises() -> list[ExerciseSummary]:
    """Every exercise, in course order."""
    return sorted((_summary(e) for e in all_exercises()), key=lambda s: (s.order, s.slug))


def exercise_detail(slug: str, version: str | None = None) -> ExerciseDetail:
    """One exercise with its description, starter and check names (of a stored ``version``:
    the one the learner's courses serve, so the starter announces the points that grade)."""
    exercise = find_exercise(slug, version)
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
