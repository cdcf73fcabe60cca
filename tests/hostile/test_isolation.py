"""One test per class of attack on the per-job isolation (the white-box review of issue 10),
through the real jail and judge. Each failed on the design before per-job namespaces."""

from __future__ import annotations

import pytest

from exercises.report import MESSAGE_CAP
from tests.hostile import isolation_sources as A
from tests.hostile import sources as S
from tests.hostile.conftest import MARKER, Jail
from tests.hostile.test_hostile import assert_nothing_escaped, fill, grade


def test_a_lingering_impersonator_decides_no_one_elses_verdict(jail: Jail) -> None:
    attacker = grade(jail, fill(A.LINGER_AND_IMPERSONATE))
    assert attacker.verdict in ("time_limit", "crashed"), attacker.message
    assert_nothing_escaped(attacker)
    assert "DENIED no /proc fd of any process" in attacker.stdout
    assert "DENIED no inherited descriptor" in attacker.stdout
    # The next learners are graded by the grader, not by the attacker.
    assert grade(jail, S.HONEST, seed=21).score == 100
    stub = grade(jail, A.STUB, seed=22)
    assert stub.score <= 5, [c.message for c in stub.checks]
    assert grade(jail, S.HONEST, seed=23).score == 100


def test_a_poisoned_tmp_reaches_no_later_job(jail: Jail) -> None:
    grade(jail, fill(A.POISON_TMP))
    honest = grade(jail, S.HONEST, seed=31)
    assert honest.score == 100, [c.message for c in honest.checks if not c.passed]
    finder = grade(jail, fill(S.FIND_TRACES), seed=32)
    assert "DENIED no file of another job" in finder.stdout and MARKER not in finder.stdout
    assert grade(jail, S.HONEST, seed=33).score == 100


def test_ancestors_cannot_be_reached(jail: Jail) -> None:
    report = grade(jail, fill(A.REACH_ANCESTORS))
    assert_nothing_escaped(report)
    assert report.stdout.count("DENIED") >= 15
    assert "OWN setpriority 0" in report.stdout  # its own process is still its own
    assert report.score == 100
    assert grade(jail, S.HONEST, seed=41).score == 100


@pytest.mark.parametrize("code", sorted(A.EXIT_CODES_OF_THE_SANDBOX))
def test_exit_codes_the_sandbox_uses_are_the_learners_own_once_it_runs(jail: Jail, code: int) -> None:
    report = grade(jail, A.EXIT_CODES_OF_THE_SANDBOX[code])  # grade() refuses internal_error
    # 21 is the harness's MemoryError code: a claim that costs the learner an attempt and earns 0.
    assert report.verdict == ("memory_limit" if code == 21 else "crashed") and report.score == 0, report.message


def test_an_exit_inside_the_call_is_the_learners_own(jail: Jail) -> None:
    report = grade(jail, A.EXIT_CODE_IN_CALL)
    assert report.verdict == "crashed" and report.score == 0, report.message


def test_huge_messages_are_capped_and_odd_text_survives(jail: Jail) -> None:
    report = grade(jail, A.HUGE_MESSAGE)
    assert report.verdict == "graded"
    assert report.checks and all(len(c.message) <= MESSAGE_CAP for c in report.checks)
    assert any("characters cut" in c.message for c in report.checks)
    assert "NUL" in report.stdout


def test_hiding_an_in_place_edit_fails_the_in_place_check(jail: Jail) -> None:
    report = grade(jail, A.HIDE_IN_PLACE_EDIT)
    # The harness is out of sys.modules while learner code runs (issue 19): the patch cannot start.
    assert (report.verdict, report.score) == ("runtime_error", 0.0), report.message
    assert "KeyError" in report.message and "sandbox.harness" in report.message


def test_attached_outputs_dressed_as_detached_fail_the_detach_check(jail: Jail) -> None:
    report = jail.judge.grade("gae", A.GAE_ATTACHED_CLAIMING_DETACHED, 5)  # type: ignore[attr-defined]
    assert report.verdict == "graded"
    assert report.score <= 15, [(c.name, c.passed) for c in report.checks]
    assert not any(c.passed for c in report.checks if "detach" in c.name.lower())


def test_a_numpy_loss_with_a_fake_backward_earns_no_gradient_points(jail: Jail) -> None:
    report = grade(jail, A.NUMPY_LOSS_WITH_FAKE_BACKWARD)
    assert report.score <= 15, [(c.name, c.passed, c.message[:120]) for c in report.checks]
    assert any("torch.Tensor" in c.message for c in report.checks if not c.passed)


def test_the_measured_run_is_graded_too(jail: Jail) -> None:
    honest = grade(jail, S.HONEST, seed=51)
    cheat = grade(jail, A.CHEAP_ON_THE_MEASURED_RUN, seed=51)
    memory = next(c for c in cheat.checks if "memory" in c.name)
    assert not memory.passed and "large input" in memory.message and "wrong" in memory.message
    assert cheat.score < 100
    # Speed and memory figures come from a verified run only: the cheap one gives none.
    assert honest.cpu_seconds is not None and honest.peak_memory_bytes is not None
    assert cheat.cpu_seconds is None and cheat.peak_memory_bytes is None


@pytest.mark.parametrize("name", sorted(A.PATHOLOGICAL_SOURCES))
def test_pathological_sources_are_syntax_errors(jail: Jail, name: str) -> None:
    report = grade(jail, A.PATHOLOGICAL_SOURCES[name])
    assert report.verdict == "syntax_error", (report.verdict, report.message)
    assert report.score == 0


# -- gpu-mode's pygpubench exploit list ----------------------------------------------------------

def test_ptrace_and_process_vm_reach_nothing(jail: Jail) -> None:
    report = grade(jail, fill(A.PTRACE_AND_PROCESS_VM))
    assert_nothing_escaped(report)
    assert report.stdout.count("DENIED") == 11 and report.score == 100


def test_proc_mem_and_the_secret_are_out_of_reach(jail: Jail) -> None:
    report = grade(jail, fill(A.PROC_MEM_AND_SECRET_SCAN))
    assert_nothing_escaped(report)
    assert "DENIED no grader secret in memory" in report.stdout and "DENIED clean environment" in report.stdout
    assert report.score >= 90  # (the scan itself may cost the memory check)


def test_a_detoured_digest_cannot_vouch_for_a_cheap_measured_run(jail: Jail) -> None:
    report = grade(jail, A.DETOUR_THE_DIGEST)
    # The harness is out of sys.modules while learner code runs (issue 19): the detour cannot start.
    assert (report.verdict, report.score) == ("runtime_error", 0.0), report.message
    assert "KeyError" in report.message and not report.checks  # no check ran, so no speed figure either


def test_patched_timers_do_not_hide_cpu_time(jail: Jail) -> None:
    honest = grade(jail, S.HONEST, seed=61)
    slow = grade(jail, A.PATCH_TIMERS, seed=61)
    assert slow.score == 100
    # CPU time comes from the kernel's count for the job's cgroup, not from the child's clocks.
    assert slow.cpu_seconds is not None and honest.cpu_seconds is not None
    assert slow.cpu_seconds > honest.cpu_seconds + 0.04


def test_shadowed_modules_change_nothing_the_judge_believes(jail: Jail) -> None:
    report = grade(jail, A.SHADOW_MODULES)
    assert report.score <= 5, [(c.name, c.passed) for c in report.checks]


def test_a_seccomp_trap_of_its_own_only_hurts_itself(jail: Jail) -> None:
    report = grade(jail, fill(A.SECCOMP_TRAP_OWN_WRITES))
    assert report.verdict in ("crashed", "graded", "output_limit"), report.message
    assert report.score <= 100
    assert grade(jail, S.HONEST, seed=71).score == 100


# -- found by the red team -------------------------------------------------------------------------

@pytest.mark.parametrize("lead", [0.02, 0.08, 0.2, 0.5])
def test_a_report_straddling_the_deadline_is_never_internal_error(jail: Jail, lead: float) -> None:
    from tests.hostile.conftest import LIMITS

    report = grade(jail, fill(A.RACE_THE_DEADLINE, wall=LIMITS.wall_seconds, lead=lead))  # grade(): no internal_error
    assert report.verdict in ("crashed", "time_limit"), report.message
    after = grade(jail, S.HONEST, seed=81)
    assert after.score == 100 and after.timings.get("jail_jail_start", 0) == 0  # the host was not replaced


def test_a_safetensors_header_bomb_costs_the_judge_nothing(jail: Jail) -> None:
    honest = grade(jail, S.HONEST, seed=82)  # the baseline, in this test, under this load
    report = grade(jail, fill(A.SAFETENSORS_HEADER_BOMB))
    assert report.verdict == "crashed" and report.score == 0
    assert report.timings["total"] < 3 * honest.timings["total"] + 5, (report.timings, honest.timings)
    assert report.timings.get("jail_collect", 0) < 4 * honest.timings.get("jail_collect", 0) + 1.0, \
        (report.timings, honest.timings)


def test_a_hook_zeroing_gradients_does_not_make_outputs_detached(jail: Jail) -> None:
    report = jail.judge.grade("gae", A.GAE_ATTACHED_WITH_ZEROING_HOOK, 5)  # type: ignore[attr-defined]
    detach = [c for c in report.checks if "detach" in c.name.lower()]
    assert detach and not any(c.passed for c in detach), [(c.name, c.passed) for c in report.checks]


def test_syscalls_newer_than_the_filter_are_refused(jail: Jail) -> None:
    report = grade(jail, fill(A.NEWER_SYSCALLS))
    assert_nothing_escaped(report)
    assert report.stdout.count("DENIED") == 6 and report.score == 100


@pytest.mark.parametrize("lead", [0.3, 0.6, 1.0])
def test_a_poisoned_control_pipe_fails_no_later_learner(jail: Jail, lead: float) -> None:
    from tests.hostile.conftest import LIMITS

    attacker = grade(jail, fill(A.POISON_THE_PIPE, wall=LIMITS.wall_seconds, lead=lead, tmp=LIMITS.tmp_bytes))  # never internal_error
    assert attacker.verdict in ("crashed", "time_limit"), attacker.message
    victim = grade(jail, S.HONEST, seed=91)
    assert victim.score == 100, victim.message
