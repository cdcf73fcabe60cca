"""Issue 32: the packs are configured once, with the service (``serve --pack``, recorded in its
database), and every command run without any pack variable in its shell sees them."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.e2e.installations import REPO, serve
from tests.exercises.packs.conftest import Cli, edit, one_error_line, scaffold

pytestmark = pytest.mark.slow


def test_admin_commands_without_a_pack_variable_see_the_served_packs(cli: Cli, tmp_path: Path) -> None:
    pack = tmp_path / "course-pack"
    folder = scaffold(cli, pack, "clipped-diff")
    assert not any(k == "PPO_GRADER_EXERCISE_PACKS" for k in cli.env)
    env = {**cli.env, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "client")])}  # the server's packages
    with serve(REPO, env, tmp_path, "--pack", str(pack)) as served:
        banner = served.stderr.splitlines()[:2]
        assert banner[0].startswith("database: sqlite:///"), banner
        assert banner[1].startswith("packs: built-in (") and f"{pack} (1 exercise: clipped-diff)" in banner[1], banner

        listed = cli("exercises", "list")
        assert listed.returncode == 0 and "clipped-diff" in listed.stdout, listed.stderr
        assert cli("courses", "create", "rlhf-a").returncode == 0
        assert "exercise clipped-diff: first served at content version" in served.stderr  # serve ran the gate
        # An edit since (five points moved between two checks): only the gate refuses it.
        checks = (folder / "checks.py").read_text()
        edit(folder / "checks.py", '(default scale=1)", 40, core=True)', '(default scale=1)", 35, core=True)')
        edit(folder / "checks.py", '@check("gradient with respect to x", 20)', '@check("gradient with respect to x", 25)')
        line = one_error_line(cli("sets", "publish", "rlhf-a", "clipped-diff"))
        assert "has changed since" in line  # it sees the exercise as edited
        (folder / "checks.py").write_text(checks)  # the edit taken back
        verified = cli("exercises", "verify", "clipped-diff", "--seeds", "2")
        assert verified.returncode == 0, verified.stdout + verified.stderr
        published = cli("sets", "publish", "rlhf-a", "clipped-diff")
        assert published.returncode == 0, published.stderr
        status = cli("regrade", "status", "--exercise", "clipped-diff")
        assert "unknown" not in status.stdout, status.stdout

    # The pack folder moved away: a command that cannot see it says why in one line.
    shutil.move(pack, tmp_path / "moved")
    line = one_error_line(cli("exercises", "list"))
    assert f"exercise pack {pack}, which the service is configured with (in its database)" in line
