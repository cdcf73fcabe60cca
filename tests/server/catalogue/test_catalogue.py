"""The exercise catalogue endpoints."""

from __future__ import annotations

from exercises.registry import get_exercise

from tests.server.conftest import Api


def test_list_exercises_includes_actor_loss(api: Api) -> None:
    headers = api.user("alice")
    exercises = api.client.get("/api/v1/exercises", headers=headers).json()
    actor = next(e for e in exercises if e["slug"] == "actor-loss")
    assert set(actor) == {"slug", "title", "function", "summary", "order"}
    assert actor["function"] == "compute_actor_loss"
    assert [e["order"] for e in exercises] == sorted(e["order"] for e in exercises)


def test_read_exercise_has_starter_and_checks(api: Api) -> None:
    headers = api.user("alice")
    response = api.client.get("/api/v1/exercises/actor-loss", headers=headers)
    assert response.status_code == 200
    body = response.json()
    exercise = get_exercise("actor-loss")
    assert body["starter"] == exercise.starter
    assert "compute_actor_loss" in body["starter"]
    assert body["description"] == exercise.description
    assert [c["name"] for c in body["checks"]] == [c.name for c in exercise.checks]
    assert set(body["checks"][0]) == {"name", "weight"}
    assert sum(c["weight"] for c in body["checks"]) == 100


def test_unknown_exercise_is_404(api: Api) -> None:
    headers = api.user("alice")
    response = api.client.get("/api/v1/exercises/critic-loss-typo", headers=headers)
    assert response.status_code == 404
    assert response.json()["error"] == "ExerciseNotFound"
