"""Stored exercise versions (server/catalog/versions.py, exercises/registry.py; issue 32): a
verified version is stored whole, a set is pinned to it, and grading loads exactly that version
from the database, once per process, whatever the pack's folder holds now."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from exercises import registry
from exercises.packs import path_pack
from exercises.scaffold import new_exercise
from exercises import versions
from exercises.versions import content_version
from server.catalog.versions import pin, serving_ref, store_version, unverified_changes, version_source, versions_of
from server.config import Settings
from server.db import make_engine, make_session_factory, transaction
from server.errors import ExerciseNotVerified
from server.models import Course, ExerciseVerification, SetEntry
from tests.server.conftest import served_database


@pytest.fixture
def pack(tmp_path: Path) -> Iterator[Path]:
    new_exercise("scaled-diff", tmp_path / "pack")
    registry.load([path_pack(tmp_path / "pack")])
    yield tmp_path / "pack"
    registry.use_version_source(None)
    registry.load()  # the test run's own catalogue again


def _weights(exercise) -> dict[str, float]:  # type: ignore[no-untyped-def]
    return {c.id: c.weight for c in exercise.checks}


def test_a_pinned_set_grades_with_the_stored_version_after_the_folder_changed(
    settings: Settings, pack: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served_database(settings)
    engine = make_engine(settings.DATABASE_URL)
    sessions = make_session_factory(engine)
    first = registry.get_exercise("scaled-diff")
    v1, weights = content_version(first), _weights(first)
    with transaction(sessions) as session:
        course = Course(slug="rlhf-a", title="", time_zone="UTC")
        session.add(course)
        session.flush()
        entry = SetEntry(course_id=course.id, exercise="scaled-diff")
        session.add(entry)
        with pytest.raises(ExerciseNotVerified, match="no verified stored version"):
            pin(session, entry, first, None)
        store_version(session, first)
        session.add(
            ExerciseVerification(exercise="scaled-diff", content_version=v1, grader_version="g", pack="p", passed=True)
        )
        session.flush()
        assert pin(session, entry, first, None) == v1
        course_id = course.id

    checks = pack / "scaled_diff" / "checks.py"
    checks.write_text(
        checks.read_text()
        .replace('(default scale=1)", 40, core=True)', '(default scale=1)", 30, core=True)')
        .replace('@check("gradient with respect to x", 20)', '@check("gradient with respect to x", 30)')
    )
    monkeypatch.setattr(versions, "_content_versions", {})  # a restart: versions are read anew
    registry.load([path_pack(pack)])  # and the folder's edit is what this process loaded
    edited = registry.get_exercise("scaled-diff")
    assert content_version(edited) != v1 and _weights(edited) != weights

    registry.use_version_source(version_source(sessions))
    with sessions() as session:
        ref = serving_ref(session, course_id, "scaled-diff")
        assert ref == f"scaled-diff@{v1}"
        said = unverified_changes(session, registry.all_exercises())
        assert said == [
            f"exercise scaled-diff: the pack folder holds content version {content_version(edited)}, which is not "
            f"verified; learners are graded by the published version {v1} (verify and publish to change it)"
        ]
        lines = versions_of(session, edited, "scaled-diff")
        assert [(x.version, x.verified, x.serves, x.in_folder) for x in lines] == [
            (content_version(edited), "never", [], True),
            (v1, "passed", ["rlhf-a"], False),
        ]
    before = registry.versions_loaded[0]
    graded = registry.get_exercise(ref)
    assert _weights(graded) == weights and content_version(graded) == v1 and graded.pack == first.pack
    assert registry.get_exercise(ref) is graded
    assert registry.versions_loaded[0] == before + 1  # written out and imported once per process
    with pytest.raises(registry.UnknownExercise):
        registry.get_exercise("scaled-diff@000000000000")
    engine.dispose()
