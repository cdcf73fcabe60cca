"""Issue 23's acceptance path: a pack made with `exercises new`, its reference changed and a fault
added, verified (by serve as it sees the exercise first, then by hand), served by a real server,
graded for a learner through the real `ppo-submit`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.exercises.packs.conftest import Cli, edit, one_error_line, scaffold

pytestmark = pytest.mark.slow

CLIPPED = "    return scale * torch.clamp(x - y, -1.0, 1.0)\n"
NO_CLIP_TITLE = "the difference is not clipped to [-1, 1]"

CORRECT = '''import torch


def compute_clipped_diff(x, y, scale=1.0):
    if y.shape != x.shape:
        raise ValueError("y must have the shape of x")
    return scale * (x - y).clamp(min=-1.0, max=1.0)
'''

WRONG = '''import torch


def compute_clipped_diff(x, y, scale=1.0):
    if y.shape != x.shape:
        raise ValueError("y must have the shape of x")
    return scale * (x - y)
'''


def _author_a_clipped_difference(cli: Cli, pack: Path) -> Path:
    """What a course author does: scaffold, change the reference, add a fault for a new mistake."""
    folder = scaffold(cli, pack, "clipped-diff")
    edit(folder / "reference.py", "    return scale * (x - y)\n", CLIPPED)
    # The answers worked out by hand follow the new rule (verify checks the reference against them):
    # 0.5 * clip(3 - 1) is 0.5, not 1.
    edit(folder / "starter.py", "torch.tensor([1.0, 0.0])), got", "torch.tensor([0.5, 0.0])), got")
    edit(folder / "spec.py", 'expect="torch.tensor([1.0, 0.0])"', 'expect="torch.tensor([0.5, 0.0])"')
    edit(folder / "faulty.py", "    return scale * diff\n",
         '    if "no-clip" in faults:\n        return scale * diff\n    return scale * torch.clamp(diff, -1.0, 1.0)\n')
    edit(folder / "mutants.py", "\n]\n",
         f'\n    fault("no-clip", "{NO_CLIP_TITLE}", fix="Clamp x - y to [-1, 1] before scaling.",\n'
         '          explains=("values", "scaled", "gradient", "dtype_device")),\n]\n')
    return folder


def test_a_course_pack_from_scaffold_to_a_graded_learner(cli: Cli, serve, tmp_path: Path):
    pack = tmp_path / "course-pack"
    _author_a_clipped_difference(cli, pack)

    server = serve([pack])
    # Seen for the first time, the exercise went through the gate in serve (issue 32) ...
    log = (tmp_path / "server.log").read_text()
    assert "exercise clipped-diff: first served at content version" in log and "(verified now)" in log, log
    # ... and the author's own run of it says the same.
    verified = server.cli("exercises", "verify", "--pack", str(pack))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "2 fault(s): each caught on every seed, named on what it explains" in verified.stdout
    published = server.cli("sets", "publish", "default", "clipped-diff")
    assert published.returncode == 0, published.stderr  # verified at this content version
    learner = server.add_learner("ada")
    listing = server.submit(learner, "exercises")
    assert "clipped-diff" in listing.stdout, listing.stdout + listing.stderr

    right, wrong = tmp_path / "right.py", tmp_path / "wrong.py"
    right.write_text(CORRECT)
    wrong.write_text(WRONG)
    done = server.submit(learner, str(right), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result["exercise"] == "clipped-diff" and result["verdict"] == "graded" and result["score"] == 100

    done = server.submit(learner, str(wrong), "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result["verdict"] == "graded" and result["score"] < 100
    named = [c for c in result["checks"] if not c["passed"] and c.get("mistake_title") == NO_CLIP_TITLE]
    assert named, [(c["name"], c.get("mistake_title")) for c in result["checks"]]

    shown = server.submit(learner, str(wrong))
    assert NO_CLIP_TITLE in " ".join(shown.stdout.split()), shown.stdout


def test_publishing_needs_a_passed_verify_at_the_current_content_version(cli: Cli, tmp_path: Path):
    pack = tmp_path / "course-pack"
    folder = _author_a_clipped_difference(cli, pack)
    cli.env["PPO_GRADER_EXERCISE_PACKS"] = str(pack)
    assert cli("--init", "courses", "create", "rlhf-a").returncode == 0

    line = one_error_line(cli("sets", "publish", "rlhf-a", "clipped-diff"))
    assert "cannot be published: it has never been verified" in line and f"--pack {pack}" in line
    assert cli("sets", "publish", "rlhf-a", "gae").returncode == 0, "the built-in pack ships verified"

    edit(folder / "mutants.py", 'explains=("values", "scaled", "gradient", "dtype_device")),\n]',
         'explains=("values",)),\n]')
    assert cli("exercises", "verify", "--pack", str(pack), "--seeds", "2").returncode == 1
    line = one_error_line(cli("sets", "publish", "rlhf-a", "clipped-diff"))
    assert "its last verify at this version failed" in line

    edit(folder / "mutants.py", 'explains=("values",)),\n]', 'explains=("values", "scaled", "gradient", "dtype_device")),\n]')
    assert cli("exercises", "verify", "--pack", str(pack), "--seeds", "2").returncode == 0
    assert cli("sets", "publish", "rlhf-a", "clipped-diff").returncode == 0

    # Any change to what decides scores needs a new verify; the starter's wording does not.
    edit(folder / "starter.py", "A scaled difference, elementwise.", "A scaled, clipped difference, elementwise.")
    assert cli("sets", "publish", "rlhf-a", "clipped-diff").returncode == 0
    edit(folder / "reference.py", CLIPPED, CLIPPED.replace("-1.0, 1.0", "min=-1.0, max=1.0"))
    line = one_error_line(cli("sets", "publish", "rlhf-a", "clipped-diff"))
    assert "was last verified at content version" in line and "has changed since" in line
