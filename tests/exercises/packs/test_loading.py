"""Loading packs: the built-in catalogue is one, configured folders and installed entry points
add theirs, and a pack that cannot load stops the command with one line, leaving no half-loaded
catalogue behind."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from exercises import registry
from exercises.packs import BUILTIN, PackError, builtin_pack, load_catalogue, path_pack
from tests.exercises.packs.conftest import RLOO_PACK, Cli, edit, one_error_line, scaffold

CONTRACT = [
    "actor-loss", "masked-actor-loss", "gae", "critic-loss", "token-rewards", "pairwise-loss",
    "whiten", "kl-penalty", "grpo-advantages", "dpo-loss", "ppo-memory",
]


def test_the_builtin_eleven_are_a_pack():
    catalogue = load_catalogue([builtin_pack()])
    assert list(catalogue) == CONTRACT
    assert {e.pack for e in catalogue.values()} == {BUILTIN}
    assert [e.slug for e in registry.all_exercises()] == CONTRACT, "no pack is configured in the test run"


def test_configured_folders_add_their_exercises(cli: Cli, tmp_path: Path):
    pack = tmp_path / "course"
    scaffold(cli, pack, "my-diff")
    listed = cli("exercises", "list", packs=[pack, RLOO_PACK])
    assert listed.returncode == 0, listed.stderr
    assert "my-diff" in listed.stdout and "rloo-advantages" in listed.stdout and "gae" in listed.stdout
    assert "rloo-advantages" not in cli("exercises", "list").stdout, "the example is not in the default catalogue"


def test_an_installed_entry_point_is_a_pack(cli: Cli, tmp_path: Path):
    site = tmp_path / "site"
    scaffold(cli, site / "course_pack", "entry-diff")
    (site / "course_pack" / "__init__.py").write_text('"""A course\'s pack, installed as a distribution."""\n')
    info = site / "course_pack-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: course-pack\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[ppo_grader.exercises]\nrlhf = course_pack\n")
    cli.env["PYTHONPATH"] = str(site)
    listed = cli("exercises", "list")
    assert listed.returncode == 0, listed.stderr
    assert "entry-diff" in listed.stdout and "compute_entry_diff" in listed.stdout


def test_a_slug_in_two_packs_stops_the_service_naming_both(cli: Cli, tmp_path: Path):
    first, second = scaffold(cli, tmp_path / "a", "my-diff"), scaffold(cli, tmp_path / "b", "my-diff")
    line = one_error_line(cli("serve", "--port", "9", packs=[tmp_path / "a", tmp_path / "b"]))
    assert "'my-diff' is defined twice" in line and str(first) in line and str(second) in line


def test_a_slug_of_the_builtin_pack_clashes_too(cli: Cli, tmp_path: Path):
    folder = scaffold(cli, tmp_path / "a", "my-gae")
    edit(folder / "spec.py", 'slug="my-gae"', 'slug="gae"')
    line = one_error_line(cli("exercises", "list", packs=[tmp_path / "a"]))
    assert "'gae' is defined twice" in line and "pack built-in" in line and str(folder) in line


def test_an_import_error_in_checks_is_one_line_with_the_place(cli: Cli, tmp_path: Path):
    folder = scaffold(cli, tmp_path / "a", "my-diff")
    edit(folder / "checks.py", "import torch\n", "import torch\nimport torch_extras_nobody_installed\n")
    for command in (("serve", "--port", "9"), ("worker",), ("exercises", "verify", "--pack", str(tmp_path / "a"))):
        line = one_error_line(cli(*command, packs=[tmp_path / "a"]))
        assert "ModuleNotFoundError" in line and f"{folder / 'checks.py'}:" in line, line


def test_points_that_do_not_add_up_to_100_are_refused(cli: Cli, tmp_path: Path):
    folder = scaffold(cli, tmp_path / "a", "my-diff")
    edit(folder / "checks.py", '@check("gradient with respect to x", 20)', '@check("gradient with respect to x", 10)')
    line = one_error_line(cli("exercises", "verify", "--pack", str(tmp_path / "a")))
    assert "check weights sum to 90" in line and "not 100" in line and "my_diff/" in line


def test_a_failed_load_leaves_the_catalogue_as_it_was(cli: Cli, tmp_path: Path):
    good, bad = tmp_path / "good", tmp_path / "bad"
    scaffold(cli, good, "good-diff")
    broken = scaffold(cli, bad, "bad-diff")
    (broken / "mutants.py").write_text("raise RuntimeError('half written')\n")
    try:
        registry.load([path_pack(good)])
        assert registry.get_exercise("good-diff").pack == str(good.resolve())
        with pytest.raises(PackError, match="half written"):
            registry.load([path_pack(good), path_pack(bad)])
        assert [e.slug for e in registry.all_exercises()] == [*CONTRACT, "good-diff"], "the previous catalogue stays"
        with pytest.raises(PackError):
            load_catalogue([builtin_pack(), path_pack(good), path_pack(bad)])
    finally:
        registry.load()  # the test run's own catalogue again (no pack configured)
    assert [e.slug for e in registry.all_exercises()] == CONTRACT


def test_a_missing_folder_and_an_empty_pack_are_one_line_each(cli: Cli, tmp_path: Path):
    assert "is not a folder" in one_error_line(cli("exercises", "list", packs=[tmp_path / "nowhere"]))
    (tmp_path / "empty").mkdir()
    assert "holds no exercise folder" in one_error_line(cli("exercises", "list", packs=[tmp_path / "empty"]))


def test_a_bad_slug_is_refused_by_the_scaffold(cli: Cli, tmp_path: Path):
    assert "lower-case words" in one_error_line(cli("exercises", "new", "My Diff", "--pack", str(tmp_path)))
    assert sys.executable  # the CLI ran from this interpreter's environment


def test_the_scaffolds_next_line_names_every_file_it_wrote(cli: Cli, tmp_path: Path):
    done = cli("exercises", "new", "my-diff", "--pack", str(tmp_path))
    assert done.returncode == 0, done.stderr
    written = sorted(p.name for p in (tmp_path / "my_diff").iterdir())
    line = " ".join(done.stderr.split())
    assert "Next: edit" in line and all(name in line for name in written), (written, line)
