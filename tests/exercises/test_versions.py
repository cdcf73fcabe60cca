"""Content and grader versions: stable, sensitive to what grades, blind to the starter."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from exercises import versions
from exercises.registry import all_exercises, get_exercise


def test_every_exercise_has_a_stable_short_version() -> None:
    seen = {}
    for exercise in all_exercises():
        v = versions.content_version(exercise)
        assert len(v) == versions.VERSION_LENGTH and int(v, 16) >= 0
        seen[exercise.slug] = v
    assert len(set(seen.values())) == len(seen), "two exercises share a content version"
    versions._content_versions.clear()
    assert {e.slug: versions.content_version(e) for e in all_exercises()} == seen


@pytest.fixture
def copied_gae(tmp_path: Path):  # type: ignore[no-untyped-def]
    exercise = get_exercise("gae")
    folder = tmp_path / "gae"
    shutil.copytree(exercise.folder, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return replace(exercise, folder=str(folder)), folder


def _fresh(exercise):  # type: ignore[no-untyped-def]
    versions._content_versions.clear()
    return versions.content_version(exercise)


def test_a_check_edit_changes_the_version_and_a_starter_edit_does_not(copied_gae) -> None:  # type: ignore[no-untyped-def]
    exercise, folder = copied_gae
    before = _fresh(exercise)
    assert before == _fresh(get_exercise("gae")), "the version depends on bytes, not on where the folder is"
    (folder / "starter.py").write_text((folder / "starter.py").read_text() + "\n# a friendlier hint\n")
    assert _fresh(exercise) == before
    checks = folder / "checks.py"
    checks.write_text(checks.read_text() + "\nTOLERANCE_NOTE = 'a check file edited mid-term'\n")
    assert _fresh(exercise) != before


def test_the_grader_version_covers_the_jail() -> None:
    names = [name for name, _ in versions._exercise_files(Path(get_exercise("gae").folder))]
    assert "starter.py" not in names and "checks.py" in names
    assert len(versions.grader_version()) == versions.VERSION_LENGTH
    assert any(p.name == "harness.py" for p in versions._SANDBOX_DIR.glob("*.py"))
