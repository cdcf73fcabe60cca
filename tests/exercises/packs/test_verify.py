"""The gate: `ppo-grader exercises verify --pack DIR` through the real jail, on bad packs as an
author would write them, each failing for one reason stated in words the author can act on."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.exercises.packs.conftest import RLOO_PACK, Cli, edit, scaffold

pytestmark = pytest.mark.slow


def _problems(out: str, slug: str) -> list[str]:
    return [line.split(f"x {slug}: ", 1)[1] for line in out.splitlines() if f"x {slug}: " in line]


def test_the_scaffold_passes_verify_as_written(cli: Cli, tmp_path: Path):
    scaffold(cli, tmp_path / "pack", "my-diff")
    done = cli("exercises", "verify", "--pack", str(tmp_path / "pack"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "my-diff (pack" in done.stdout and "FAIL" not in done.stdout
    assert "reference scores 100 on 20 seeds" in done.stdout
    assert "1 of 1 exercise(s) pass verify" in done.stdout


def test_the_rloo_example_passes_verify():
    from exercises.judge import Judge
    from exercises.packs import load_pack, path_pack
    from exercises.verify import verify_exercise

    (exercise,) = load_pack(path_pack(RLOO_PACK))
    judge = Judge(secret=b"rloo-" + b"r" * 32)
    try:
        # the exercise is graded by slug: it must be in the catalogue the judge reads
        from exercises import registry
        registry.load([path_pack(RLOO_PACK)])
        result = verify_exercise(judge, registry.get_exercise(exercise.slug))
    finally:
        judge.close()
        registry.load()
    assert result.ok, result.problems()
    assert {m.key for m in exercise.mistakes} >= {"baseline-includes-self", "wrong-denominator"}


def test_bad_packs_each_fail_for_their_one_reason(cli: Cli, tmp_path: Path):
    pack = tmp_path / "pack"
    # A reference that fails its own checks: it broadcasts instead of raising ValueError.
    wrong = scaffold(cli, pack, "wrong-reference")
    edit(wrong / "reference.py", "    if y.shape != x.shape:\n", "    if False:\n")
    # A fault no check catches: a switch that changes nothing the checks see.
    blind = scaffold(cli, pack, "blind-fault")
    edit(blind / "faulty.py", "    return scale * diff\n",
         "    if \"negative-zero\" in faults:\n        diff = diff + 0.0\n    return scale * diff\n")
    edit(blind / "mutants.py", "\n]\n", '\n    fault("negative-zero", "adds zero", fix="nothing", explains=("values",)),\n]\n')
    # A starter that hands out the reference's body.
    leaky = scaffold(cli, pack, "leaky-starter")
    edit(leaky / "starter.py", '    raise NotImplementedError("compute_leaky_starter is not written yet")\n',
         "    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):\n"
         '        raise ValueError("x and y must be tensors")\n'
         "    if y.shape != x.shape:\n"
         '        raise ValueError(f"y has shape {tuple(y.shape)}, expected {tuple(x.shape)} (the shape of x)")\n'
         "    return scale * (x - y)\n")
    # A starter that does not announce a check's points.
    quiet = scaffold(cli, pack, "quiet-starter")
    edit(quiet / "starter.py", "        - gradient with respect to x [20]\n", "")
    miscounted = scaffold(cli, pack, "miscounted-starter")
    edit(miscounted / "starter.py", "- gradient with respect to x [20]", "- gradient with respect to x [10]")

    done = cli("exercises", "verify", "--pack", str(pack), "--seeds", "2")  # five exercises: two seeds each
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "Traceback" not in out + done.stderr
    assert "0 of 5 exercise(s) pass verify" in out

    (reference,) = _problems(out, "wrong-reference")
    assert reference.startswith("the reference fails its own checks shape_errors on seeds 1, 2 (2 of 2) "
                                "(seed 1: Expected ValueError for mismatched shapes"), reference

    assert _problems(out, "blind-fault") == ["fault negative-zero is not caught on seeds 1, 2 (2 of 2) by any check"]

    leak, passes = _problems(out, "leaky-starter")  # and, holding the answer, it scores 100
    assert passes.startswith("the starter scores 100 (graded): it must not pass as it is"), passes
    assert re.match(r"the starter holds 3 of the 3 statements of the reference's compute_leaky_starter\(\)", leak), leak
    assert "learners would receive the answer" in leak

    assert _problems(out, "quiet-starter") == [
        "check gradient is not announced in the starter's docstring (expected: 'gradient with respect to x')"]
    assert _problems(out, "miscounted-starter") == [
        "check gradient: the starter does not state its points [20] after its announcement"]


def test_a_fault_that_fails_checks_it_does_not_explain_is_named(cli: Cli, tmp_path: Path):
    folder = scaffold(cli, tmp_path / "pack", "my-diff")
    edit(folder / "mutants.py", 'explains=("values", "scaled", "gradient", "dtype_device")', 'explains=("values",)')
    done = cli("exercises", "verify", "--pack", str(tmp_path / "pack"), "--seeds", "2")
    assert done.returncode == 1
    assert _problems(done.stdout, "my-diff") == [
        "fault swapped-operands fails dtype_device, gradient, scaled on seeds 1, 2 (2 of 2), which its explains= does "
        "not list"]
