"""A learner's whole path: the real server, the real jail, the real `ppo-submit` as a subprocess."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exercises.registry import all_exercises, get_exercise

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def learner(server) -> str:
    return server.add_user("ada")


def test_exercises_and_starter(server, learner):
    listing = server.submit(learner, "exercises")
    assert listing.returncode == 0, listing.stderr
    assert "actor-loss" in listing.stdout and "compute_actor_loss" in listing.stdout
    starter = server.submit(learner, "starter", "actor-loss")
    assert starter.returncode == 0
    assert starter.stdout.strip() == get_exercise("actor-loss").starter.strip()


def test_correct_file_scores_100(server, learner, tmp_path: Path):
    path = tmp_path / "solution.py"
    path.write_text(get_exercise("actor-loss").reference_source)
    done = server.submit(learner, str(path), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["exercise"] == "actor-loss"  # found from the function the file defines
    assert result["status"] == "done" and result["verdict"] == "graded" and result["score"] == 100
    assert result["checks"] and all(c["passed"] for c in result["checks"])
    assert {"name", "passed", "weight", "message"} <= set(result["checks"][0])


def test_wrong_file_names_the_mistake(server, learner, tmp_path: Path):
    ex = get_exercise("actor-loss")
    mutant = next(m for m in ex.mistakes if m.key == "max-for-min")
    path = tmp_path / "wrong.py"
    path.write_text(mutant.source(ex.function_name))
    done = server.submit(learner, str(path), "--json")
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["verdict"] == "graded" and result["score"] < 100
    failed = [c for c in result["checks"] if not c["passed"]]
    assert any(mutant.title in c["message"] for c in failed)


def test_table_output_and_syntax_error(server, learner, tmp_path: Path):
    path = tmp_path / "broken.py"
    path.write_text("def compute_actor_loss(a, b, c, clip_range=0.2):\n    return (a +\n")
    done = server.submit(learner, str(path), "--exercise", "actor-loss")
    assert done.returncode == 1
    assert "syntax_error" in done.stdout.lower() or "syntax error" in done.stdout.lower()
    # the file as the learner named it, at the bracket never closed, with the line and a caret
    assert f"--> {path}:2:12" in done.stdout, done.stdout
    assert "2 |     return (a +" in done.stdout
    assert "^ '(' was never closed" in done.stdout
    assert "Traceback" not in done.stderr


def test_a_file_that_raises_on_every_call_shows_one_error_at_its_line(server, learner, tmp_path: Path):
    path = tmp_path / "typo.py"
    path.write_text(
        "def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):\n"
        "    ratio = (log_probs_new - log_prob_old).exp()\n"
        "    return -(ratio * advantages).mean()\n"
    )
    done = server.submit(learner, str(path))
    assert done.returncode == 1, done.stderr
    assert done.stdout.count("name 'log_prob_old' is not defined") == 1, done.stdout
    assert f"--> {path}:2:" in done.stdout
    assert "NameError on every call" in done.stdout


def test_unreachable_server_is_one_line(server, learner, tmp_path: Path):
    path = tmp_path / "solution.py"
    path.write_text(get_exercise("actor-loss").reference_source)
    env_url = server.url
    server.url = "http://127.0.0.1:9"
    try:
        done = server.submit(learner, str(path))
    finally:
        server.url = env_url
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("slug", [e.slug for e in all_exercises()])
def test_every_exercise_is_listed_and_graded_through_the_server(server, learner, tmp_path: Path, slug):
    """The whole catalogue end to end: listed, its starter served, its reference graded 100."""
    listing = server.submit(learner, "exercises")
    assert slug in listing.stdout
    ex = get_exercise(slug)
    path = tmp_path / f"{slug}.py"
    path.write_text(ex.reference_source)
    done = server.submit(learner, str(path), "--json")
    result = json.loads(done.stdout)
    assert result["exercise"] == slug, "found from the function the file defines"
    assert (done.returncode, result["verdict"], result["score"]) == (0, "graded", 100), result["message"]
