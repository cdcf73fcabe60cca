"""Exercise versions as artifacts (issue 32): what the service grades with, by set.

- A pack exercise that passes ``exercises verify`` is stored whole (every Python file of its
  folder) under its content version, once and never changed (:func:`store_version`).
- ``sets publish`` pins the set to a stored version (:func:`pin`); the workers look up the
  version a submission's set serves when they claim it (:func:`serving_version`), and load that
  version from the database (:func:`version_source`), so a publish takes effect on a running
  API and its workers without a restart, and an edit of the pack's folder changes nothing a
  learner sees until it is verified and published.
- Where no set pins a version (the default course's open exercises, a set published before
  versions were stored), a pack exercise grades with its *served version*
  (:func:`served_version`): the stored, verified version the service first served
  (``server.catalog.verification.serve_first``), which no folder edit moves. A pack exercise
  with no verified version at all grades with nothing (:data:`UNVERIFIED`); a built-in
  exercise grades with the code the grader ships.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from exercises import registry
from exercises.packs import BUILTIN
from exercises.registry import StoredVersion, VersionSource
from exercises.versions import Versioned, content_version, exercise_ref, grader_version
from server.errors import ExerciseNotVerified
from server.models import (
    DEFAULT_COURSE_ID,
    DEFAULT_COURSE_SLUG,
    Course,
    Enrollment,
    ExerciseVerification,
    ExerciseVersion,
    ServedVersion,
    SetEntry,
)
from server.times import local_time

if TYPE_CHECKING:  # a type only: reading versions must not import torch
    from exercises.framework import Exercise

#: The most bytes of source one stored version may hold (an exercise folder is a few files).
MAX_VERSION_BYTES = 2 * 1024 * 1024

#: What a pack exercise with no verified version is served at: no stored version has this name,
#: so nothing can grade with it (a submission is refused, a claimed one ends as the grader's
#: internal error, never graded with whatever the folder holds).
UNVERIFIED = "unverified"

#: The learner's message on a submission claimed while its exercise had no verified version.
UNVERIFIED_MESSAGE = (
    "This exercise has no verified version on the service yet, so your submission was not graded "
    "(it does not count against you); your instructor has been told. Submit again later."
)


def version_files(exercise: Exercise) -> dict[str, str]:
    """Every Python file of the exercise's folder (starter included), by relative path."""
    folder = Path(exercise.folder)
    files = {
        p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(folder.rglob("*.py"))
        if "__pycache__" not in p.parts
    }
    size = sum(len(t.encode()) for t in files.values())
    if size > MAX_VERSION_BYTES:
        raise ExerciseNotVerified(
            f"{exercise.slug!r}: its folder holds {size} bytes of Python, more than the {MAX_VERSION_BYTES} a "
            "stored version may: move data out of the exercise folder"
        )
    return files


def store_version(session: Session, exercise: Exercise) -> ExerciseVersion:
    """The stored version of ``exercise`` at its content version (written once, never changed)."""
    version = content_version(exercise)
    row = session.scalar(
        select(ExerciseVersion).where(
            ExerciseVersion.exercise == exercise.slug, ExerciseVersion.content_version == version
        )
    )
    if row is None:
        row = ExerciseVersion(
            exercise=exercise.slug,
            content_version=version,
            pack=exercise.pack[:512],
            folder=Path(exercise.folder).name[:255],
            files=version_files(exercise),
        )
        session.add(row)
        session.flush()
    return row


def stored(session: Session, slug: str, version: str) -> ExerciseVersion | None:
    """The stored version ``version`` of ``slug``, if any."""
    return session.scalar(
        select(ExerciseVersion).where(ExerciseVersion.exercise == slug, ExerciseVersion.content_version == version)
    )


def passed(session: Session, slug: str, version: str) -> bool:
    """Whether a verify of ``slug`` at ``version`` passed."""
    return (
        session.scalar(
            select(ExerciseVerification.id)
            .where(
                ExerciseVerification.exercise == slug,
                ExerciseVerification.content_version == version,
                ExerciseVerification.passed.is_(True),
            )
            .limit(1)
        )
        is not None
    )


def pin(session: Session, entry: SetEntry, exercise: Exercise, version: str | None) -> str | None:
    """Pin a set entry to the version it is to serve: ``version`` if given, else the exercise's
    loaded (current) version; a pack exercise's must be stored and verified. The pin, or None
    for a built-in exercise (graded by the code the grader ships)."""
    if exercise.pack == BUILTIN and version is None:
        entry.content_version = None
        return None
    wanted = version or content_version(exercise)
    if stored(session, exercise.slug, wanted) is None or not passed(session, exercise.slug, wanted):
        raise ExerciseNotVerified(
            f"{exercise.slug!r} has no verified stored version {wanted}: `ppo-grader exercises versions "
            f"{exercise.slug}` lists those there are"
        )
    entry.content_version = wanted
    return wanted


def served_version(session: Session, slug: str) -> str | None:
    """The served version of ``slug`` (:class:`~server.models.ServedVersion`), if recorded."""
    row = session.get(ServedVersion, slug)
    return row.content_version if row is not None else None


def record_served(session: Session, slug: str, version: str) -> bool:
    """Record ``version`` (stored and verified) as the served version of ``slug`` unless one is
    recorded already (nothing moves it); whether this call recorded it."""
    if session.get(ServedVersion, slug) is not None:
        return False
    session.add(ServedVersion(exercise=slug, content_version=version))
    session.flush()
    return True


def newest_verified(session: Session, slug: str) -> str | None:
    """The newest stored version of ``slug`` a verify passed on, if any."""
    return session.scalar(
        select(ExerciseVersion.content_version)
        .join(
            ExerciseVerification,
            (ExerciseVerification.exercise == ExerciseVersion.exercise)
            & (ExerciseVerification.content_version == ExerciseVersion.content_version),
        )
        .where(ExerciseVersion.exercise == slug, ExerciseVerification.passed.is_(True))
        .order_by(ExerciseVersion.id.desc())
        .limit(1)
    )


def _unpinned_version(session: Session, slug: str) -> str | None:
    """What grades ``slug`` where no set pins a version: its served version; :data:`UNVERIFIED`
    for a pack exercise that has none; None (the shipped code) for a built-in one or a slug
    the catalogue lacks."""
    served = served_version(session, slug)
    if served is not None:
        return served
    try:
        loaded = registry.get_exercise(slug)
    except registry.UnknownExercise:
        return None
    return None if loaded.pack == BUILTIN else UNVERIFIED


def serving_version(session: Session, course_id: int | None, slug: str) -> str | None:
    """The stored version the course's set grades ``slug`` with: its pin, else (no entry, or
    one from before versions were stored) the served version; None: the loaded (built-in)
    exercise; :data:`UNVERIFIED`: nothing may grade it."""
    pinned = (
        session.scalar(
            select(SetEntry.content_version).where(SetEntry.course_id == course_id, SetEntry.exercise == slug)
        )
        if course_id is not None
        else None
    )
    return pinned or _unpinned_version(session, slug)


def serving_ref(session: Session, course_id: int | None, slug: str) -> str:
    """What a worker grades a submission of ``slug`` in the course with (``exercises.versions.exercise_ref``)."""
    return exercise_ref(slug, serving_version(session, course_id, slug))


def version_for_user(session: Session, user_id: int, slug: str) -> str | None:
    """The version of ``slug`` the user's courses serve, when they agree on one (a learner's
    starter and points are those of the version that grades them), else the served version
    (None: the loaded exercise)."""
    pins = set(
        session.scalars(
            select(SetEntry.content_version)
            .join(Enrollment, Enrollment.course_id == SetEntry.course_id)
            .where(Enrollment.user_id == user_id, SetEntry.exercise == slug, SetEntry.content_version.is_not(None))
        )
    )
    if len(pins) == 1:
        return pins.pop()
    return served_version(session, slug)


def regrade_version(session: Session, slug: str, course_id: int | None) -> str | None:
    """The version a regrade of ``slug`` grades with: the course's set's, or (across courses)
    the newest version any set pins, else the served version; None: the loaded exercise."""
    if course_id is not None:
        return serving_version(session, course_id, slug)
    newest = session.scalar(
        select(SetEntry.content_version)
        .join(
            ExerciseVersion,
            (ExerciseVersion.exercise == SetEntry.exercise)
            & (ExerciseVersion.content_version == SetEntry.content_version),
        )
        .where(SetEntry.exercise == slug)
        .order_by(ExerciseVersion.id.desc())
        .limit(1)
    )
    return newest or _unpinned_version(session, slug)


def version_source(sessions: sessionmaker[Session]) -> VersionSource:
    """The registry's way to the stored versions in this database (``registry.use_version_source``)."""

    def find(slug: str, version: str) -> StoredVersion | None:
        with sessions() as session:
            row = stored(session, slug, version)
            return StoredVersion(row.pack, row.folder, dict(row.files)) if row is not None else None

    return find


class InPack(Versioned, Protocol):
    """An exercise as ``exercises versions`` needs it: its slug, folder and pack (a loaded
    exercise, or its entry in ``server.catalog.service.catalogue_index``)."""

    @property
    def pack(self) -> str: ...


@dataclass(frozen=True)
class VersionLine:
    """One version of an exercise, for ``exercises versions``."""

    version: str
    stored: bool
    verified: str  # "passed", "failed" or "never"
    verified_at: str
    grader_version: str
    serves: list[str]
    in_folder: bool
    #: The served version: what grades wherever no set pins one.
    served: bool = False


def versions_of(session: Session, exercise: InPack | None, slug: str) -> list[VersionLine]:
    """Every version of ``slug`` known here: stored ones, verified ones, the folder's, newest
    first, each with the courses it grades (a course whose set pins none: the served version;
    the default course without an entry opens the exercise too)."""
    rows = session.scalars(select(ExerciseVersion).where(ExerciseVersion.exercise == slug)).all()
    checks = session.scalars(
        select(ExerciseVerification)
        .where(ExerciseVerification.exercise == slug)
        .order_by(ExerciseVerification.id.desc())
    ).all()
    serving: dict[str, list[str]] = {}
    pins = session.execute(
        select(Course.id, Course.slug, SetEntry.content_version)
        .join(Course, Course.id == SetEntry.course_id)
        .where(SetEntry.exercise == slug)
        .order_by(Course.slug)
    ).tuples()
    folder = content_version(exercise) if exercise is not None else None
    served = served_version(session, slug)
    # Unpinned: the served version; a built-in exercise (none recorded): the code this process loaded.
    unpinned = served or (folder if exercise is not None and exercise.pack == BUILTIN else None)
    in_default = False
    for course_id, course, version in pins:
        in_default = in_default or course_id == DEFAULT_COURSE_ID
        if version or unpinned:
            serving.setdefault(version or unpinned or "", []).append(course)
    if unpinned is not None and not in_default:
        serving.setdefault(unpinned, []).insert(0, DEFAULT_COURSE_SLUG)
    order: list[str] = []
    for version in [
        *(r.content_version for r in sorted(rows, key=lambda r: -r.id)),
        *(c.content_version for c in checks),
    ]:
        if version not in order:
            order.append(version)
    if folder is not None and folder not in order:
        order.insert(0, folder)
    stored_versions = {r.content_version for r in rows}
    lines = []
    for version in order:
        mine = [c for c in checks if c.content_version == version]
        verdict = "passed" if any(c.passed for c in mine) else ("failed" if mine else "never")
        lines.append(
            VersionLine(
                version=version,
                stored=version in stored_versions,
                verified=verdict,
                verified_at=local_time(mine[0].verified_at, "UTC", seconds=False) if mine else "-",
                grader_version=mine[0].grader_version if mine else grader_version(),
                serves=serving.get(version, []),
                in_folder=version == folder,
                served=version == served,
            )
        )
    return lines


def unverified_changes(session: Session, exercises: list[Exercise]) -> list[str]:
    """One sentence per pack exercise whose folder holds a version no verify passed and no set
    serves (issue 32's silent weight change): the service keeps grading with the published
    versions and, where no set pins one, with the served version."""
    said = []
    for exercise in exercises:
        if exercise.pack == BUILTIN:
            continue
        version = content_version(exercise)
        pinned = sorted(
            {
                v
                for v in session.scalars(select(SetEntry.content_version).where(SetEntry.exercise == exercise.slug))
                if v
            }
        )
        served = served_version(session, exercise.slug)
        if version in pinned or version == served or passed(session, exercise.slug, version):
            continue
        head = f"exercise {exercise.slug}: the pack folder holds content version {version}, which is not verified; "
        if pinned and served in (None, *pinned):
            said.append(
                head
                + f"learners are graded by the published version {', '.join(pinned)} (verify and publish to change it)"
            )
        elif pinned:
            said.append(
                head + f"learners are graded by the published version {', '.join(pinned)} and, where no set pins "
                f"a version, by the served version {served} (verify and publish to change it)"
            )
        elif served is not None:
            said.append(
                head + f"learners are graded by the served version {served}, the verified version the service "
                f"first served (verify, then publish: `ppo-grader sets publish default {exercise.slug}` for the "
                "default course)"
            )
        else:
            said.append(
                head + "no verified version of it is stored, so nothing grades it (run `ppo-grader exercises verify`)"
            )
    return said
