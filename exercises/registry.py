"""The catalogue: every exercise of every pack (:mod:`exercises.packs`), by slug.

The built-in pack is the ``exercises`` package's own folders; operators add packs through
installed entry points and the folders the service is configured with (recorded in its database
by ``serve``; the server hands them over with :func:`serve_folders`). The catalogue is built once per
process, whole or not at all: a pack that fails to load raises
:class:`~exercises.packs.PackError` and leaves no catalogue behind, so the next call fails the
same way instead of serving half of it.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from exercises.packs import Pack, configured_packs, load_catalogue, load_exercise, register_package
from exercises.versions import content_version, pin_content_version, split_ref

if TYPE_CHECKING:  # a type only: the admin commands that never load an exercise must not import torch
    from exercises.framework import Exercise

_lock = threading.Lock()
_cache: dict[str, Exercise] | None = None
#: The pack folders the service is configured with (:func:`serve_folders`).
_served: list[str] = []


class UnknownExercise(KeyError):
    """No exercise has this slug (or no stored version of it has this content version)."""

    def __str__(self) -> str:
        return f"no exercise named {self.args[0]!r}"


@dataclass(frozen=True)
class StoredVersion:
    """An exercise version as stored by the service: where it was verified from and its files."""

    pack: str
    folder: str
    files: dict[str, str]


#: Where stored versions come from (the server's database; :func:`use_version_source`).
VersionSource = Callable[[str, str], StoredVersion | None]
_source: list[VersionSource] = []
_versions: dict[tuple[str, str], Exercise] = {}
_version_root: list[Path] = []
#: Stored versions loaded from their files, by this process (tests count them).
versions_loaded = [0]


def use_version_source(source: VersionSource | None) -> None:
    """Where :func:`get_exercise` finds a stored version (None: nowhere, only the loaded catalogue)."""
    with _lock:
        _source[:] = [source] if source is not None else []
        _versions.clear()  # another database may hold other versions under the same names


def serve_folders(folders: list[str]) -> None:
    """The pack folders the service is configured with, for every later :func:`load` (the
    catalogue is built anew on next use)."""
    global _cache
    with _lock:
        _served[:] = folders
        _cache = None


def served_folders() -> list[str]:
    """The pack folders handed over by :func:`serve_folders`."""
    return list(_served)


def load(extra: list[Pack] | None = None, served: list[str] | None = None) -> list[Exercise]:
    """Build the catalogue now from the configured packs (``served``, when given, replacing the
    folders of :func:`serve_folders`) plus ``extra`` (verify's ``--pack``) and use it from here
    on; :class:`~exercises.packs.PackError` leaves the previous catalogue and folders."""
    global _cache
    with _lock:
        folders = _served if served is None else served
        catalogue = load_catalogue(configured_packs(extra or [], folders))
        _served[:] = folders
        _cache = catalogue
        return list(catalogue.values())


def _exercises() -> dict[str, Exercise]:
    global _cache
    with _lock:
        if _cache is None:
            _cache = load_catalogue(configured_packs(served=_served))
        return _cache


def loaded_exercises() -> list[Exercise] | None:
    """The catalogue if this process has built it already (None: not yet; nothing is loaded)."""
    with _lock:
        return None if _cache is None else list(_cache.values())


def all_exercises() -> list[Exercise]:
    """Every exercise, in catalogue order."""
    return list(_exercises().values())


def get_exercise(ref: str, version: str | None = None) -> Exercise:
    """The exercise ``ref`` names (a slug, or ``slug@version``: :func:`exercises.versions.exercise_ref`)
    at ``version`` if given: the loaded one when it is that version, else the stored version,
    written out and imported once per process; :class:`UnknownExercise` when there is neither."""
    slug, in_ref = split_ref(ref)
    version = version or in_ref
    loaded = _exercises().get(slug)
    if version is None or (loaded is not None and content_version(loaded) == version):
        if loaded is None:
            raise UnknownExercise(slug)
        return loaded
    with _lock:
        found = _versions.get((slug, version))
        source = _source[0] if _source else None
    if found is not None:
        return found
    stored = source(slug, version) if source is not None else None
    if stored is None:
        raise UnknownExercise(f"{slug}@{version}")
    exercise = _load_stored(slug, version, stored)
    with _lock:
        return _versions.setdefault((slug, version), exercise)


def _load_stored(slug: str, version: str, stored: StoredVersion) -> Exercise:
    """Write a stored version's files into this process's own folder and import them as a pack
    of one exercise (its own package name: two versions of one exercise never share modules)."""
    with _lock:
        if not _version_root:
            _version_root.append(Path(tempfile.mkdtemp(prefix="ppo-grader-versions-")))
        root = _version_root[0] / f"{slug}-{version}"
    folder = root / Path(stored.folder).name
    for rel, text in stored.files.items():
        target = (folder / rel).resolve()
        if not target.is_relative_to(folder.resolve()):  # a stored path is data: never outside its folder
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    pack = Pack(f"{stored.pack} (stored version {version})", root, f"ppo_grader_packs.v{version}")
    register_package(pack)
    exercise = load_exercise(pack, folder)
    exercise.pack = stored.pack
    pin_content_version(exercise, version)
    versions_loaded[0] += 1
    return exercise


def _exercise_of(item_id: str) -> Exercise | None:
    slug = item_id.split("/", 1)[0]
    return _exercises().get(slug)


def check_name(check_id: str) -> str | None:
    """Today's sentence of the check ``"<slug>/<check>"``; None when the catalogue has none such."""
    exercise = _exercise_of(check_id)
    return next((c.name for c in exercise.checks if exercise.check_id(c) == check_id), None) if exercise else None


def mistake_title(mistake_id: str) -> str | None:
    """Today's title of the mistake ``"<slug>/<mistake>"``; None when the catalogue has none such."""
    exercise = _exercise_of(mistake_id)
    return next((m.title for m in exercise.mistakes if m.id == mistake_id), None) if exercise else None
