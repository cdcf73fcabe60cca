"""Hostile and broken submissions through the real jail (bubblewrap, seccomp, cgroups) and the
real judge. Each ends in a named verdict with a message a learner can act on, never earns more
than honest work, never leaks the grader's secrets and never breaks the jail for the next job."""

from __future__ import annotations

import socket
import uuid
from typing import Any

import pytest

from exercises.report import VERDICTS, GradeReport
from tests.hostile import sources as S
from tests.hostile.conftest import CANARY, MARKER, REPO, Jail

SLUG = "actor-loss"
#: What the judge keeps of stdout/stderr (8 KiB) plus its truncation note.
STORED_OUTPUT_CAP = (8 << 10) + 200
TOKEN = "OTHER-LEARNER-" + uuid.uuid4().hex
OUTSIDE_DIRS = [str(REPO), str(REPO / "exercises"), "/work", "/work/shared", "/usr", "/usr/lib", "/", "/root",
                "/etc", "/tmp/..", "/jail/lib/sandbox", "/jail/site", "/dev", "/dev/shm", "/proc", "/var/tmp"]
SECRET_PATHS = [str(REPO / "exercises" / "actor_loss" / "reference.py"),
                str(REPO / "exercises" / "actor_loss" / "checks.py"),
                str(REPO / "pyproject.toml"), str(REPO / "server" / "config.py"),
                "/work/shared/DESIGN.md", "/etc/shadow", "/root/.bash_history"]


@pytest.fixture(scope="module")
def api_port() -> Any:
    """A listening socket standing in for the API: nothing from the jail may connect to it."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.setblocking(False)
    yield srv
    srv.close()


def fill(template: str, **extra: Any) -> str:
    params = dict(ports=[5432, 6379, 5672, 8000], paths=SECRET_PATHS, canary=CANARY, token=TOKEN,
                  canary_head=CANARY[:12], canary_tail=CANARY[12:],
                  token_head=TOKEN[:14], token_tail=TOKEN[14:], marker=MARKER, dirs=OUTSIDE_DIRS)
    params.update(extra)
    return template.format(**params)


def grade(jail: Jail, source: str, seed: int = 7) -> GradeReport:
    report = jail.judge.grade(SLUG, source, seed)  # type: ignore[attr-defined]
    everything = " ".join([report.message, report.stdout, report.stderr, *(c.message for c in report.checks)])
    assert report.verdict in VERDICTS
    assert report.verdict != "internal_error", report.message  # the learner's doing is never the grader's fault
    assert report.score is not None and 0 <= report.score <= 100
    assert report.message.strip()
    assert CANARY not in everything, "the grader's secret reached the learner"
    assert "HostFailure" not in report.message and "/jail/lib/sandbox" not in report.message
    assert len(report.stdout) <= STORED_OUTPUT_CAP and len(report.stderr) <= STORED_OUTPUT_CAP
    return report


def assert_nothing_escaped(report: GradeReport) -> None:
    out = report.stdout + report.stderr
    bad = [line for line in out.splitlines() if line.startswith(("ESCAPED", "LEAK"))]
    assert not bad, bad


# -- baseline ---------------------------------------------------------------------------------

def test_honest_solution_earns_full_marks(jail: Jail) -> None:
    report = grade(jail, S.HONEST)
    assert (report.verdict, report.score) == ("graded", 100), report.message


# -- time -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["LOOP_AT_IMPORT", "LOOP_IN_CALL", "SLEEP_IN_CALL", "BUSY_THREADS_IGNORING_SIGXCPU",
                                  "SIGNAL_TRICKS", "STOP_SELF"])
def test_code_that_never_ends_hits_the_time_limit(jail: Jail, name: str) -> None:
    report = grade(jail, getattr(S, name))
    assert report.verdict == "time_limit", report.message
    assert report.score == 0
    assert "limit" in report.message and (" s CPU-time" in report.message or " s wall-clock" in report.message)


def test_threads_that_sleep_forever_do_not_outlive_the_job(jail: Jail) -> None:
    report = grade(jail, S.SLEEPING_THREADS)
    assert (report.verdict, report.score) == ("graded", 100), report.message


# -- memory -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["MEMORY_PYTHON_OBJECTS", "MEMORY_PYTHON_INTS_IN_CALL", "MEMORY_TENSOR",
                                  "MEMORY_TENSOR_ABSURD"])
def test_memory_exhaustion_hits_the_memory_limit(jail: Jail, name: str) -> None:
    report = grade(jail, getattr(S, name))
    assert report.verdict == "memory_limit", report.message
    assert report.score == 0
    assert "512 MiB memory limit" in report.message


def test_huge_returned_tensor_hits_the_output_limit(jail: Jail) -> None:
    report = grade(jail, S.HUGE_RETURNED_TENSOR)
    assert report.verdict == "output_limit", report.message
    assert "8 MiB output limit" in report.message


# -- processes --------------------------------------------------------------------------------

def test_fork_bomb_is_refused_with_a_hint(jail: Jail) -> None:
    report = grade(jail, S.FORK_BOMB)
    assert report.verdict == "runtime_error", report.message
    assert "PermissionError" in report.message and "start processes" in report.message


def test_background_processes_cannot_be_started(jail: Jail) -> None:
    report = grade(jail, fill(S.BACKGROUND_PROCESSES))
    assert (report.verdict, report.score) == ("graded", 100), report.message
    assert_nothing_escaped(report)
    for attempt in ("os.fork", "subprocess", "posix_spawn", "multiprocessing", "execv", "fork in call"):
        assert f"DENIED {attempt}" in report.stdout, attempt


# -- network ----------------------------------------------------------------------------------

def test_no_network_to_database_broker_or_api(jail: Jail, api_port: socket.socket) -> None:
    ports = [5432, 6379, 5672, api_port.getsockname()[1]]
    report = grade(jail, fill(S.NETWORK, ports=ports))
    assert (report.verdict, report.score) == ("graded", 100), report.message
    assert_nothing_escaped(report)
    for port in ports:
        assert f"DENIED connect {port}" in report.stdout
    with pytest.raises(BlockingIOError):
        api_port.accept()  # nobody knocked


# -- reading ----------------------------------------------------------------------------------

def test_environment_proc_server_files_and_references_are_out_of_reach(jail: Jail) -> None:
    report = grade(jail, fill(S.SNOOP))
    assert (report.verdict, report.score) == ("graded", 100), report.message
    assert_nothing_escaped(report)
    env_line = next(line for line in report.stdout.splitlines() if line.startswith("ENV "))
    assert "PPO_GRADER" not in env_line and "SECRET" not in env_line
    for path in SECRET_PATHS:
        assert f"DENIED read {path}" in report.stdout, path
    for module in ("exercises", "server", "exercises.actor_loss.reference"):
        assert f"DENIED import {module} " in report.stdout
    assert "DENIED no reference, exercise or database file anywhere" in report.stdout


def test_a_job_finds_nothing_of_the_job_before_it(jail: Jail) -> None:
    first = grade(jail, fill(S.LEAVE_TRACES), seed=11)
    assert first.verdict == "graded"
    second = grade(jail, fill(S.FIND_TRACES), seed=12)
    assert second.verdict == "graded", second.message  # (its memory scan fails the memory check)
    assert_nothing_escaped(second)
    assert "DENIED no file of another job" in second.stdout
    assert "DENIED no other source in memory" in second.stdout
    assert MARKER not in second.stdout  # /tmp was wiped


# -- writing ----------------------------------------------------------------------------------

def test_nothing_can_be_written_outside_the_private_tmp(jail: Jail) -> None:
    report = grade(jail, fill(S.WRITE_OUTSIDE))
    assert (report.verdict, report.score) == ("graded", 100), report.message
    assert_nothing_escaped(report)
    assert "OK write private tmp" in report.stdout
    for d in OUTSIDE_DIRS:
        assert f"DENIED write {d}" in report.stdout, d


@pytest.mark.parametrize("name", ["FILL_DISK_ONE_FILE", "FILL_DISK_MANY_FILES"])
def test_filling_the_disk_hits_the_output_limit_and_the_next_job_is_fine(jail: Jail, name: str) -> None:
    report = grade(jail, fill(getattr(S, name)))
    assert report.verdict == "output_limit", report.message
    assert "output limit" in report.message or "temporary folder" in report.message
    assert grade(jail, S.HONEST).score == 100


# -- forging a result -------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["FORGE_STDOUT", "FORGE_FDS", "KILL_PARENT"])
def test_forged_output_and_killing_the_parent_change_nothing(jail: Jail, name: str) -> None:
    report = grade(jail, fill(getattr(S, name)))
    assert report.verdict == "graded", report.message
    assert_nothing_escaped(report)
    assert report.score == 100  # the honest work inside still counts, and only it


@pytest.mark.parametrize("name, verdicts", [
    # "ok" written at import, before the module asked for its inputs: malformed (review 7)
    ("FORGE_EMPTY_RESULT_AND_EXIT", {"crashed"}),
    ("FORGE_MALFORMED_TREE", {"crashed"}),
    ("FORGE_DEEP_JSON", {"crashed"}),
    ("EXIT_ZERO_AT_IMPORT", {"crashed"}),
    ("SELF_SIGKILL", {"crashed"}),
])
def test_forged_result_files_never_pass(jail: Jail, name: str, verdicts: set[str]) -> None:
    report = grade(jail, getattr(S, name))
    assert report.verdict in verdicts, report.message
    assert report.score < 100 and report.score <= 5


@pytest.mark.parametrize("name", ["FORGE_RESULT_FILE_AND_EXIT", "PATCH_HARNESS", "NAN_FLOAT"])
def test_float_outputs_fail_checks_without_crashing_the_judge(jail: Jail, name: str) -> None:
    report = grade(jail, getattr(S, name))
    assert report.verdict in ("graded", "crashed", "runtime_error") and report.score < 100
    if name == "PATCH_HARNESS":  # the sandbox package cannot be imported by learner code (issue 19)
        assert (report.verdict, "ModuleNotFoundError") == ("runtime_error", report.message.split()[3]), report.message


# -- monkey-patching and lying objects --------------------------------------------------------

@pytest.mark.parametrize("name", ["PATCH_TORCH_AND_BUILTINS", "FAKE_TENSOR", "LYING_SUBCLASS", "NAN_RESULT",
                                  "INF_RESULT"])
def test_patches_pretend_tensors_and_non_finite_results_earn_little(jail: Jail, name: str) -> None:
    report = grade(jail, getattr(S, name))
    assert report.verdict in ("graded", "crashed", "runtime_error", "memory_limit"), report.message
    assert report.score <= 15, (report.score, report.message)


# -- crashes ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name, verdict, words", [
    ("SEGFAULT", "crashed", "segmentation fault"),
    ("SEGFAULT_IN_CALL", "crashed", "segmentation fault"),
    ("RECURSION", "runtime_error", "RecursionError"),
    ("SYSTEM_EXIT_AT_IMPORT", "runtime_error", "SystemExit"),
    ("KEYBOARD_INTERRUPT_AT_IMPORT", "runtime_error", "KeyboardInterrupt"),
])
def test_crashes_are_named(jail: Jail, name: str, verdict: str, words: str) -> None:
    report = grade(jail, getattr(S, name))
    assert report.verdict == verdict, report.message
    assert words in report.message and report.score == 0


@pytest.mark.parametrize("name", ["SYSTEM_EXIT_IN_CALL", "KEYBOARD_INTERRUPT_IN_CALL"])
def test_exits_inside_the_call_are_per_call_errors(jail: Jail, name: str) -> None:
    report = grade(jail, getattr(S, name))
    assert report.verdict == "graded" and report.score == 0, report.message


def test_unbounded_recursion_with_a_raised_limit_ends_in_a_named_verdict(jail: Jail) -> None:
    report = grade(jail, S.RECURSION_C_STACK)
    assert report.verdict in ("memory_limit", "crashed", "runtime_error"), report.message
    assert report.score == 0


# -- output -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["HUGE_STDOUT", "HUGE_STDERR"])
def test_huge_output_hits_the_output_limit_and_stays_small(jail: Jail, name: str) -> None:
    report = grade(jail, getattr(S, name))
    assert report.verdict == "output_limit", report.message
    assert "8 MiB output limit" in report.message
    stream = report.stdout if name == "HUGE_STDOUT" else report.stderr
    assert "bytes cut]" in stream


def test_large_allowed_output_is_kept_as_head_and_tail(jail: Jail) -> None:
    report = grade(jail, S.BIG_BUT_ALLOWED_OUTPUT)
    assert (report.verdict, report.score) == ("graded", 100), report.message
    assert report.stdout.startswith("FIRST LINE") and "LAST LINE" in report.stdout
    assert "bytes cut]" in report.stdout


# -- malformed sources ------------------------------------------------------------------------

def test_syntax_error_names_the_line(jail: Jail) -> None:
    report = grade(jail, S.SYNTAX_ERROR)
    assert report.verdict == "syntax_error" and report.line == 3
    assert "line 3" in report.message


@pytest.mark.parametrize("name", ["LONE_SURROGATE", "NUL_BYTES"])
def test_text_that_is_not_python_source_is_a_syntax_error(jail: Jail, name: str) -> None:
    report = grade(jail, getattr(S, name))
    assert report.verdict == "syntax_error", report.message


@pytest.mark.parametrize("name, defined", [("NO_FUNCTION", "actor_loss"), ("NOT_CALLABLE", "none")])
def test_missing_function_lists_what_was_defined(jail: Jail, name: str, defined: str) -> None:
    report = grade(jail, getattr(S, name))
    assert report.verdict == "missing_function"
    assert "compute_actor_loss" in report.message and defined in report.message


def test_the_jail_still_grades_honest_work_after_all_this(jail: Jail) -> None:
    assert grade(jail, S.HONEST, seed=99).score == 100
