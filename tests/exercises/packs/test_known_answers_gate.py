"""Issue 32: verify refuses a reference that contradicts the starter's own self-test, naming
it, through the real CLI and the real jail (the checks alone compare learners with that same
reference, so a wrong sign passed 7/7 on 20 seeds)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.exercises.packs.conftest import Cli, edit, one_error_line, scaffold

pytestmark = pytest.mark.slow


def test_a_reference_contradicting_the_starters_self_test_is_refused_naming_it(cli: Cli, tmp_path: Path) -> None:
    pack = tmp_path / "course-pack"
    folder = scaffold(cli, pack, "scaled-diff")
    # The planted bug: the reference's sign is flipped (and its faulty copy follows it, as an
    # author's would), so every check, comparing with the reference, still passes.
    edit(folder / "reference.py", "    return scale * (x - y)\n", "    return -scale * (x - y)\n")
    edit(folder / "faulty.py", "    return scale * diff\n", "    return -scale * diff\n")
    assert cli("--init", "courses", "create", "rlhf-a").returncode == 0

    done = cli("exercises", "verify", "--pack", str(pack), "--seeds", "2", packs=[pack])
    assert done.returncode == 1, done.stdout + done.stderr
    starter = (folder / "starter.py").read_text().splitlines()
    line = next(i for i, t in enumerate(starter, 1) if t.strip().startswith("assert torch.allclose(got"))
    said = [t for t in done.stdout.splitlines() if "the reference disagrees with" in t]
    assert len(said) == 2, done.stdout
    assert f"the starter's self-test at starter.py line {line} (assert torch.allclose(got" in said[0]
    assert "the spec's known answer 'half of 3 - 1 is 1'" in said[1]
    assert "reference scores 100 on 2 seeds" in done.stdout  # the checks alone saw nothing wrong
    line_out = one_error_line(cli("sets", "publish", "rlhf-a", "scaled-diff", packs=[pack]))
    assert "its last verify at this version failed" in line_out
