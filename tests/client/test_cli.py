"""The commands, run through Typer's CliRunner against the fake grader."""

from __future__ import annotations

import json
import socket
import stat
from pathlib import Path

import pytest

from ppo_submit.cli import route

from .conftest import Invoke
from .fakes import CHECKS, SERVER, STARTER, TOKEN, FakeGrader, graded


def assert_one_error_line(stderr: str, *needles: str) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in stderr
    for needle in needles:
        assert needle in lines[0]


# -- routing -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["sol.py"], ["submit", "sol.py"]),
        (["sol.py", "--json"], ["submit", "sol.py", "--json"]),
        (["--server", "http://x", "sol.py"], ["--server", "http://x", "submit", "sol.py"]),
        (["--token=t", "sol.py", "-e", "actor-loss"], ["--token=t", "submit", "sol.py", "-e", "actor-loss"]),
        (["submit", "sol.py"], ["submit", "sol.py"]),
        (["history"], ["history"]),
        (["--help"], ["--help"]),
        ([], []),
    ],
)
def test_a_file_as_first_argument_means_submit(argv: list[str], expected: list[str]) -> None:
    assert route(argv) == expected


# -- submit: exit codes ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("final", "code"),
    [
        (graded(100.0), 0),
        (graded(40.0), 1),
        ({"verdict": "syntax_error", "score": None, "message": "line 3: invalid syntax", "checks": []}, 1),
        ({"verdict": "time_limit", "score": None, "message": "over 10 s", "checks": []}, 1),
        ({"verdict": "internal_error", "score": None, "message": "jail failed to start", "checks": []}, 2),
    ],
)
def test_exit_code_follows_the_verdict(invoke: Invoke, grader: FakeGrader, solution: Path, final: dict, code: int) -> None:
    grader.final = final
    result = invoke(str(solution))
    assert result.exit_code == code, result.output
    assert f"Verdict: {final['verdict']}" in result.stdout
    if final["verdict"] == "internal_error":
        assert_one_error_line(result.stderr, "not your code's fault")
    else:
        assert result.stderr == ""


def test_result_shows_checks_score_and_output(invoke: Invoke, grader: FakeGrader, solution: Path) -> None:
    grader.final = graded(60.0)
    result = invoke(str(solution))
    out = result.stdout
    for text in ("clip_range", "wrong for clip_range=0.1", "clip range fixed at 0.2", "60 / 100",
                 "peak memory 50.0 MiB", "hello from the learner", "✓", "✗"):
        assert text in out, out
    sent = json.loads(grader.posted()[0].content)
    assert sent == {"exercise": "actor-loss", "source": solution.read_text(), "filename": "solution.py"}


@pytest.mark.parametrize("field", ["mistake_title", "misconception"])
def test_the_named_mistake_is_read_from_a_new_or_an_older_server(
    invoke: Invoke, grader: FakeGrader, solution: Path, field: str
) -> None:
    """A server from before issue 33 names a check's mistake ``misconception`` only; the new
    one sends ``mistake_title`` (and the old name, deprecated): the client reads either."""
    checks = [{(field if k == "mistake_title" else k): v for k, v in c.items()} for c in CHECKS]
    grader.final = {**graded(60.0), "checks": checks}
    out = invoke(str(solution)).stdout
    assert "Likely mistake: clip range fixed at 0.2" in out, out


def test_json_prints_exactly_one_object(invoke: Invoke, grader: FakeGrader, solution: Path) -> None:
    grader.final = graded(40.0)
    result = invoke(str(solution), "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)  # the whole of stdout is one JSON document
    assert {"id", "exercise", "status", "verdict", "score", "checks"} <= data.keys()
    assert data["status"] == "done" and data["score"] == 40.0 and data["exercise"] == "actor-loss"
    assert {"name", "passed", "weight", "message"} <= data["checks"][0].keys()
    assert data["timings"] == {"queue": 0.1, "checks": 1.25}  # server fields pass through
    assert result.stderr == ""


def test_no_wait_prints_the_id_and_exits_zero(invoke: Invoke, grader: FakeGrader, solution: Path) -> None:
    result = invoke(str(solution), "--no-wait")
    assert result.exit_code == 0
    assert result.stdout == "1\n"
    assert grader.polls == {}


def test_no_wait_json_prints_the_queued_submission(invoke: Invoke, solution: Path) -> None:
    result = invoke(str(solution), "--no-wait", "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["status"] == "queued"


def test_explicit_submit_subcommand(invoke: Invoke, solution: Path) -> None:
    assert invoke("submit", str(solution)).exit_code == 0


# -- submit: finding the exercise ------------------------------------------------------


def test_unparsable_file_is_submitted_when_exercise_is_given(invoke: Invoke, grader: FakeGrader, tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("x = (\n")
    grader.final = {"verdict": "syntax_error", "score": None, "message": "line 1: '(' was never closed", "checks": []}
    result = invoke(str(broken), "--exercise", "actor-loss", "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["verdict"] == "syntax_error"
    assert json.loads(grader.posted()[0].content)["source"] == "x = (\n"


def test_no_matching_function_is_a_usage_error(invoke: Invoke, grader: FakeGrader, tmp_path: Path) -> None:
    other = tmp_path / "other.py"
    other.write_text("def unrelated():\n    pass\n")
    result = invoke(str(other))
    assert result.exit_code == 2
    assert_one_error_line(result.stderr, "--exercise")
    assert result.stdout == ""
    assert not grader.submissions


def test_several_matching_functions_is_a_usage_error(invoke: Invoke, tmp_path: Path) -> None:
    both = tmp_path / "both.py"
    both.write_text("def compute_actor_loss():\n    pass\n\ndef compute_value_loss():\n    pass\n")
    result = invoke(str(both))
    assert result.exit_code == 2
    assert_one_error_line(result.stderr, "several exercises", "--exercise")


def test_missing_file_is_a_usage_error(invoke: Invoke) -> None:
    result = invoke("nope.py")
    assert result.exit_code == 2
    assert_one_error_line(result.stderr, "no such file: nope.py")


def test_bad_option_is_one_line(invoke: Invoke, solution: Path) -> None:
    result = invoke(str(solution), "--bogus")
    assert result.exit_code == 2
    assert_one_error_line(result.stderr, "--bogus")


# -- errors at the edge ----------------------------------------------------------------


def test_connection_refused_is_one_line_and_exit_2(invoke: Invoke, solution: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {"PPO_GRADER_URL": f"http://127.0.0.1:{port}", "PPO_GRADER_TOKEN": TOKEN}
    result = invoke(str(solution), "--exercise", "actor-loss", env=env, transport=None)
    assert result.exit_code == 2
    assert_one_error_line(result.stderr, "cannot reach the grader")
    assert result.stdout == ""


def test_unknown_exercise_is_one_line(invoke: Invoke, solution: Path) -> None:
    result = invoke("starter", "nope")
    assert result.exit_code == 2
    assert_one_error_line(result.stderr, "No exercise 'nope'", "ExerciseNotFound")


def test_not_logged_in_says_how_to_log_in(invoke: Invoke, solution: Path) -> None:
    result = invoke(str(solution), env={})
    assert result.exit_code == 2
    assert_one_error_line(result.stderr, "ppo-submit login")


def test_rejected_token_is_one_line(invoke: Invoke) -> None:
    result = invoke("exercises", env={"PPO_GRADER_URL": SERVER, "PPO_GRADER_TOKEN": "wrong"})
    assert result.exit_code == 2
    assert_one_error_line(result.stderr, "rejected the token", "ppo-submit login")


# -- config ----------------------------------------------------------------------------


def test_login_verifies_and_stores_a_private_config(invoke: Invoke, grader: FakeGrader, isolated_config: Path) -> None:
    result = invoke("login", "--server", SERVER + "/", "--token", TOKEN, env={})
    assert result.exit_code == 0, result.output
    assert "Ada L." in result.stdout
    assert grader.requests[0].url.path == "/api/v1/me"
    assert json.loads(isolated_config.read_text()) == {"server": SERVER, "token": TOKEN}
    assert stat.S_IMODE(isolated_config.stat().st_mode) == 0o600
    # Later commands use the stored login.
    assert invoke("exercises", env={}).exit_code == 0


def test_login_with_a_bad_token_stores_nothing(invoke: Invoke, isolated_config: Path) -> None:
    result = invoke("login", "--server", SERVER, "--token", "wrong", env={})
    assert result.exit_code == 2
    assert not isolated_config.exists()


def test_env_overrides_config_and_options_override_env(invoke: Invoke, grader: FakeGrader, isolated_config: Path) -> None:
    isolated_config.parent.mkdir(parents=True)
    isolated_config.write_text(json.dumps({"server": "http://stored.test", "token": "stale"}))
    env = {"PPO_GRADER_URL": "http://env.test", "PPO_GRADER_TOKEN": TOKEN}
    assert invoke("exercises", env=env).exit_code == 0
    assert grader.requests[-1].url.host == "env.test"
    assert invoke("--server", "http://option.test", "exercises", env=env).exit_code == 0
    assert grader.requests[-1].url.host == "option.test"
    # Without the environment the stored (stale) token is used and rejected.
    assert invoke("exercises", env={}).exit_code == 2
    assert grader.requests[-1].url.host == "stored.test"


# -- other commands --------------------------------------------------------------------


def test_starter_prints_only_the_source(invoke: Invoke) -> None:
    result = invoke("starter", "actor-loss")
    assert result.exit_code == 0
    assert result.stdout == STARTER
    assert result.stderr == ""


def test_exercises_lists_slug_function_title(invoke: Invoke) -> None:
    result = invoke("exercises")
    assert result.exit_code == 0
    for text in ("actor-loss", "compute_actor_loss", "PPO actor loss", "value-loss"):
        assert text in result.stdout


def test_history_and_show(invoke: Invoke, grader: FakeGrader, solution: Path) -> None:
    grader.final = graded(40.0)
    invoke(str(solution), "--no-wait")
    listed = invoke("history", "--exercise", "actor-loss")
    assert listed.exit_code == 0 and "actor-loss" in listed.stdout
    listing = next(r for r in grader.requests if r.url.path.endswith("/submissions") and r.method == "GET")
    assert listing.url.params["exercise"] == "actor-loss"
    grader.polls_before_done = 0
    shown = invoke("show", "1", "--json")
    assert shown.exit_code == 1
    assert json.loads(shown.stdout)["score"] == 40.0
    missing = invoke("show", "99")
    assert missing.exit_code == 2
    assert_one_error_line(missing.stderr, "SubmissionNotFound")


def test_show_names_the_versions_and_history_the_regrade_with_its_reason(
        invoke: Invoke, grader: FakeGrader, solution: Path) -> None:
    note = {"regrade": 4, "applied_at": "2026-12-11T16:05:00Z", "reason": "The k2 reference lacked its 0.5.",
            "old_verdict": "graded", "old_score": 40.0, "old_counted_score": 40.0, "new_verdict": "graded",
            "new_score": 100.0, "new_counted_score": 100.0, "old_content_version": "1b12ce2fd3bf",
            "old_grader_version": "a81c07e5f3d2"}
    grader.final = {**graded(100.0), "content_version": "3ae940064953", "grader_version": "a81c07e5f3d2",
                    "regrades": [note]}
    grader.polls_before_done = 0
    invoke(str(solution), "--no-wait")
    shown = invoke("show", "1")
    assert shown.exit_code == 0, shown.stderr
    assert "Graded by exercise version 3ae940064953, grader version a81c07e5f3d2" in shown.stdout
    one_line = " ".join(shown.stdout.split())  # wrapped at the terminal's width
    assert "Regraded 2026-12-11 16:05 UTC: graded 40 -> graded 100 (The k2 reference lacked its 0.5.)" in one_line
    listed = invoke("history")
    assert listed.exit_code == 0
    assert "Regraded" in listed.stdout and "lacked its 0.5" in " ".join(listed.stdout.split())
