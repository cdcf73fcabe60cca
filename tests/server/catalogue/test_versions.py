"""Stored exercise versions (server/catalogue/versions.py, exercises/registry.py; issue 32): a
verified version is stored whole, a set is pinned to it, and grading loads exactly that version
from the database, once per process, whatever the pack's folder holds now. Where no set pins a
version (the default course, a set from before versions were stored) the served version grades:
the first verified one, which no folder edit moves; with none, nothing grades the exercise."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from exercises import registry, versions
from exercises.packs import path_pack
from exercises.scaffold import new_exercise
from exercises.verify import Criterion, Verification
from exercises.versions import content_version
from server.catalogue.verification import first_seen, record_verification, serve_first
from server.catalogue.versions import (
    UNVERIFIED,
    UNVERIFIED_MESSAGE,
    pin,
    regrade_version,
    served_version,
    serving_ref,
    store_version,
    unverified_changes,
    version_for_user,
    version_source,
    versions_of,
)
from server.config import Settings
from server.db import make_engine, make_session_factory, transaction
from server.errors import ExerciseNotVerified
from server.models import DEFAULT_COURSE_ID, Course, ExerciseVerification, Role, SetEntry, Submission
from server.users.service import create_user
from tests.server.conftest import StartApi, served_database
from tests.server.fakes import FakeGrader


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


def _passing(exercise) -> Verification:  # type: ignore[no-untyped-def]
    return Verification(exercise.slug, exercise.pack, [Criterion("reference scores 100")])


def _failing(exercise) -> Verification:  # type: ignore[no-untyped-def]
    return Verification(exercise.slug, exercise.pack, [Criterion("reference scores 100", found={"it scored 60": [1]})])


def _edit_weights(pack: Path) -> None:
    checks = pack / "scaled_diff" / "checks.py"
    checks.write_text(
        checks.read_text()
        .replace('(default scale=1)", 40, core=True)', '(default scale=1)", 30, core=True)')
        .replace('@check("gradient with respect to x", 20)', '@check("gradient with respect to x", 30)')
    )


def test_where_no_set_pins_a_version_the_served_version_grades_and_a_folder_edit_moves_nothing(
    settings: Settings, pack: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served_database(settings)
    engine = make_engine(settings.DATABASE_URL)
    sessions = make_session_factory(engine)
    registry.use_version_source(version_source(sessions))
    first = registry.get_exercise("scaled-diff")
    v1, weights = content_version(first), _weights(first)
    with transaction(sessions) as session:
        legacy = Course(slug="legacy", title="", time_zone="UTC")  # a set published before versions were stored
        session.add(legacy)
        session.flush()
        session.add(SetEntry(course_id=legacy.id, exercise="scaled-diff"))
        session.flush()
        legacy_id = legacy.id
        # Never verified: nothing may grade it, neither in the default course nor in the old set.
        for course_id in (DEFAULT_COURSE_ID, legacy_id):
            assert serving_ref(session, course_id, "scaled-diff") == f"scaled-diff@{UNVERIFIED}"
        assert serving_ref(session, DEFAULT_COURSE_ID, "actor-loss") == "actor-loss"  # built-in: its shipped code
        assert first_seen(session, [*registry.all_exercises()]) == [(first, False)]  # pack exercises only

        # serve's gate at first sight: a failure serves nothing, a pass serves the folder's version.
        said = serve_first(session, first, _failing(first))
        assert "fails verify and no verified version of it is stored: nothing grades it" in said
        assert served_version(session, "scaled-diff") is None
        said = serve_first(session, first, _passing(first))
        assert said.startswith(f"exercise scaled-diff: first served at content version {v1} (verified now)")
        assert served_version(session, "scaled-diff") == v1 and first_seen(session, [first]) == []

    _edit_weights(pack)
    monkeypatch.setattr(versions, "_content_versions", {})  # a restart: versions are read anew
    registry.load([path_pack(pack)])
    edited = registry.get_exercise("scaled-diff")
    v2 = content_version(edited)
    assert v2 != v1 and _weights(edited) != weights
    with transaction(sessions) as session:
        assert first_seen(session, [edited]) == []  # seen before: the edit is not adopted
        for course_id in (DEFAULT_COURSE_ID, legacy_id):
            assert serving_ref(session, course_id, "scaled-diff") == f"scaled-diff@{v1}"
        assert version_for_user(session, 10**6, "scaled-diff") == v1  # the starter shown: the served one's
        assert regrade_version(session, "scaled-diff", None) == v1
        assert unverified_changes(session, [edited]) == [
            f"exercise scaled-diff: the pack folder holds content version {v2}, which is not verified; learners "
            f"are graded by the served version {v1}, the verified version the service first served (verify, then "
            "publish: `ppo-grader sets publish default scaled-diff` for the default course)"
        ]
        lines = versions_of(session, edited, "scaled-diff")
        assert [(x.version, x.verified, x.serves, x.in_folder, x.served) for x in lines] == [
            (v2, "never", [], True, False),
            (v1, "passed", ["default", "legacy"], False, True),
        ]
        # The edit verified: still nothing moves until it is published.
        record_verification(session, edited, _passing(edited))
        assert serving_ref(session, DEFAULT_COURSE_ID, "scaled-diff") == f"scaled-diff@{v1}"
        assert unverified_changes(session, [edited]) == []
        entry = SetEntry(course_id=DEFAULT_COURSE_ID, exercise="scaled-diff")
        session.add(entry)
        pin(session, entry, edited, None)  # `sets publish default scaled-diff`
        session.flush()
        assert serving_ref(session, DEFAULT_COURSE_ID, "scaled-diff") == f"scaled-diff@{v2}"
        assert serving_ref(session, legacy_id, "scaled-diff") == f"scaled-diff@{v1}"  # until it is published again
    graded = registry.get_exercise(f"scaled-diff@{v1}")
    assert _weights(graded) == weights and content_version(graded) == v1
    engine.dispose()


def test_a_pack_exercise_with_no_verified_version_is_never_graded_by_its_folder(
    settings: Settings, pack: Path, start_api: StartApi, grader: FakeGrader
) -> None:
    served_database(settings)
    engine = make_engine(settings.DATABASE_URL)
    sessions = make_session_factory(engine)
    with transaction(sessions) as session:  # a row queued before the upgrade, never graded
        ada = create_user(session, "ada", Role.LEARNER, settings.secret_bytes)
        old = Submission(user_id=ada.user.id, exercise="scaled-diff", source="x = 1\n", source_sha256="0" * 64)
        session.add(old)
        session.flush()
        old_id = old.id
    api = start_api()  # its workers take up the queued row at start
    headers = {"Authorization": f"Bearer {ada.token}"}
    done = api.wait_done(headers, old_id)
    assert done["verdict"] == "internal_error" and done["message"] == UNVERIFIED_MESSAGE
    assert grader.calls == []  # the folder graded nothing
    refused = api.client.post("/api/v1/submissions", json={"exercise": "scaled-diff", "source": "x = 1\n"}, headers=headers)
    assert refused.status_code == 409 and refused.json()["error"] == "ExerciseNotVerified", refused.text
    assert "no verified version on this service yet" in refused.json()["detail"]

    exercise = registry.get_exercise("scaled-diff")
    with transaction(sessions) as session:  # `exercises verify` passes: the first verified version serves
        record_verification(session, exercise, _passing(exercise))
    accepted = api.client.post("/api/v1/submissions", json={"exercise": "scaled-diff", "source": "x = 1\n"}, headers=headers)
    assert accepted.status_code == 202, accepted.text
    assert api.wait_done(headers, accepted.json()["id"])["verdict"] == "graded"
    assert [call[0] for call in grader.calls] == [f"scaled-diff@{content_version(exercise)}"]
    engine.dispose()
