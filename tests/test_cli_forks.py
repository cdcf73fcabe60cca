"""The forked CLI runner (tests/cli_forks.py) prints what a cold ``python -m server.cli``
prints, with the same exit code, in the command's own environment and working directory: the
suites that use it compare outputs byte for byte, so a difference here would hide one there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.cli_forks import run_cli

ROOT = Path(__file__).resolve().parents[1]


def test_a_forked_command_prints_what_a_cold_one_prints(tmp_path: Path) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PPO_GRADER_")},
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "client")]),
           "PPO_GRADER_DATABASE_URL": f"sqlite:///{tmp_path}/grader.db", "COLUMNS": "70"}
    for argv in (["exercises", "list"], ["courses", "list"], ["no-such-command"], ["users", "--help"]):
        cold = subprocess.run([sys.executable, "-m", "server.cli", *argv], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=180)
        forked = run_cli(argv, env, cwd=tmp_path)
        assert (forked.returncode, forked.stdout, forked.stderr) == (cold.returncode, cold.stdout, cold.stderr), argv
    # The command's environment and folder, not the forking process's: the database named here.
    assert "grader.db" in run_cli(["courses", "list"], env, cwd=tmp_path).stderr
