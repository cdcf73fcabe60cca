"""sandbox.exit_codes: one byte each, distinct, the harness's below the host's, and each one read
back from a real child's exit status as the host reads it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from sandbox.exit_codes import ExitCode

HARNESS = (ExitCode.OK, ExitCode.SYNTAX, ExitCode.IMPORT, ExitCode.MISSING)
HOST = (ExitCode.ABORTED, ExitCode.OUT_OF_MEMORY, ExitCode.HARNESS_FAILED, ExitCode.SANDBOX_SETUP)


def test_the_codes_are_distinct_and_fit_an_exit_status() -> None:
    values = [int(c) for c in ExitCode]
    assert len(values) == len(set(values)) == 8 and all(0 <= v <= 255 for v in values)
    assert set(ExitCode) == set(HARNESS) | set(HOST)


def test_the_harness_codes_lie_below_aborted_and_the_hosts_from_it() -> None:
    assert ExitCode.OK == 0
    assert max(HARNESS) < ExitCode.ABORTED == min(HOST)


def test_no_code_is_one_python_or_a_signal_chooses_by_itself() -> None:
    """1 (an uncaught exception), 2 (a usage error) and 128+n (a shell's signal n) are never ours."""
    assert not {1, 2} & {int(c) for c in ExitCode} and all(c < 128 for c in ExitCode)


@pytest.mark.parametrize("code", list(ExitCode))
def test_each_code_survives_a_real_exit(code: ExitCode) -> None:
    run = subprocess.run([sys.executable, "-I", "-c", f"import os; os._exit({int(code)})"], timeout=30)
    assert ExitCode(run.returncode) is code


def test_a_forked_child_reports_its_code_through_wait() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(ExitCode.HARNESS_FAILED)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and ExitCode(os.WEXITSTATUS(status)) is ExitCode.HARNESS_FAILED
