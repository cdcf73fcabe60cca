"""Issue 38 on the client's side: `ppo-submit FILE` sends the file and waits for the verdict in
one request, matched in the catalogue kept from an earlier command, refreshed when the server
says it changed or when the file matches nothing in it; a corrupt cache is ignored."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from .conftest import Invoke
from .fakes import EXERCISES, TOKEN, FakeGrader


def _paths(grader: FakeGrader) -> list[str]:
    return [f"{r.method} {r.url.path.removeprefix('/api/v1')}" for r in grader.requests]


def test_a_second_submit_is_one_request(invoke: Invoke, grader: FakeGrader, solution: Path, isolated_config: Path) -> None:
    grader.polls_before_done = 0  # graded within the POST's own wait
    first = invoke(str(solution))
    assert first.exit_code == 0, first.output
    assert _paths(grader) == ["GET /exercises", "POST /submissions"]
    post = grader.posted()[0]
    assert (post.url.params["wait"], post.url.params["late"], post.url.params["catalogue"]) == ("5", "ask", '"v1"')
    kept = isolated_config.with_name("catalogue.json")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and TOKEN not in kept.read_text()
    grader.requests.clear()
    second = invoke(str(solution))
    assert second.exit_code == 0 and second.stdout == first.stdout.replace("Submission 1", "Submission 2")
    assert _paths(grader) == ["POST /submissions"]


def test_named_exercise_needs_no_catalogue(invoke: Invoke, grader: FakeGrader, solution: Path) -> None:
    grader.polls_before_done = 0
    result = invoke(str(solution), "--exercise", "actor-loss")
    assert result.exit_code == 0
    assert _paths(grader) == ["POST /submissions"]
    assert "catalogue" not in grader.posted()[0].url.params


def test_a_verdict_slower_than_the_post_is_waited_for_on_the_wait_endpoint(invoke: Invoke, grader: FakeGrader,
                                                                           solution: Path) -> None:
    result = invoke(str(solution), "--exercise", "actor-loss")
    assert result.exit_code == 0
    assert _paths(grader) == ["POST /submissions", "GET /submissions/1", "GET /submissions/1"]


def test_no_wait_asks_the_post_for_no_wait(invoke: Invoke, grader: FakeGrader, solution: Path) -> None:
    result = invoke(str(solution), "--exercise", "actor-loss", "--no-wait")
    assert result.stdout == "1\n" and "wait" not in grader.posted()[0].url.params


def test_a_catalogue_changed_on_the_server_is_read_again(invoke: Invoke, grader: FakeGrader, solution: Path) -> None:
    grader.polls_before_done = 0
    assert invoke(str(solution)).exit_code == 0
    grader.requests.clear()
    grader.catalogue_version = '"v2"'  # e.g. an exercise released since
    grader.exercises = [*EXERCISES, {"slug": "gae", "title": "GAE", "function": "compute_gae", "summary": "", "order": 3}]
    result = invoke(str(solution))
    assert result.exit_code == 0, result.output
    assert _paths(grader) == ["POST /submissions", "GET /exercises", "POST /submissions"]
    assert grader.requests[1].headers["If-None-Match"] == '"v1"'
    assert grader.posted()[1].url.params["catalogue"] == '"v2"'
    assert len(grader.submissions) == 2  # the 409 stored nothing


def test_a_file_matching_nothing_kept_looks_in_the_server_s_catalogue(invoke: Invoke, grader: FakeGrader,
                                                                      solution: Path, tmp_path: Path) -> None:
    grader.polls_before_done = 0
    assert invoke(str(solution)).exit_code == 0
    grader.catalogue_version = '"v2"'
    grader.exercises = [*EXERCISES, {"slug": "gae", "title": "GAE", "function": "compute_gae", "summary": "", "order": 3}]
    gae = tmp_path / "gae.py"
    gae.write_text("def compute_gae():\n    return 0\n")
    grader.requests.clear()
    result = invoke(str(gae))
    assert result.exit_code == 0, result.output
    assert _paths(grader) == ["GET /exercises", "POST /submissions"]
    assert json.loads(grader.posted()[0].content)["exercise"] == "gae"
    grader.requests.clear()
    other = tmp_path / "other.py"
    other.write_text("def unrelated():\n    pass\n")
    refused = invoke(str(other))  # nothing matches, kept or fresh (304): the error it always was
    assert refused.exit_code == 2 and "--exercise" in refused.stderr
    assert _paths(grader) == ["GET /exercises"]


def test_a_corrupt_or_foreign_cache_is_ignored(invoke: Invoke, grader: FakeGrader, solution: Path,
                                               isolated_config: Path) -> None:
    grader.polls_before_done = 0
    kept = isolated_config.with_name("catalogue.json")
    kept.parent.mkdir(parents=True)
    for text in ("{not json", json.dumps({"format": 99, "entries": {}}), "[]",
                 json.dumps({"format": 1, "entries": {"x": {"version": 3, "exercises": "no"}}})):
        kept.write_text(text)
        grader.requests.clear()
        result = invoke(str(solution))
        assert result.exit_code == 0, (text, result.output)
        assert _paths(grader) == ["GET /exercises", "POST /submissions"]
    entries = json.loads(kept.read_text())["entries"]
    assert len(entries) == 1 and next(iter(entries.values()))["version"] == '"v1"'


def test_timeout_counts_from_the_submit(invoke: Invoke, grader: FakeGrader, solution: Path) -> None:
    grader.polls_before_done = 10**6
    result = invoke(str(solution), "--exercise", "actor-loss", "--timeout", "1")
    assert result.exit_code == 2 and "gave up after 1 s" in result.stderr
    assert grader.posted()[0].url.params["wait"] == "1"


def test_a_notebook_is_matched_in_the_kept_catalogue_too(invoke: Invoke, grader: FakeGrader, tmp_path: Path) -> None:
    from .test_notebook_cli import FUNCTION, write

    notebook = write(tmp_path / "actor.ipynb", "import torch", FUNCTION + "    return -(advantages).mean()\n")
    grader.polls_before_done = 0
    assert invoke(str(notebook)).exit_code == 0
    assert _paths(grader) == ["GET /exercises", "POST /submissions"]
    grader.requests.clear()
    grader.catalogue_version = '"v2"'  # changed on the server: matched again, sent again
    result = invoke(str(notebook))
    assert result.exit_code == 0, result.output
    assert _paths(grader) == ["POST /submissions", "GET /exercises", "POST /submissions"]
    assert json.loads(grader.posted()[1].content)["exercise"] == "actor-loss"
