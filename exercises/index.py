"""The catalogue's index without importing it: each exercise's slug, title, order and function
name, read from its ``spec.py`` source (the literal arguments of its ``ExerciseSpec(...)``),
with its pack and folder (what its content version hashes: ``exercises.versions``).

Loading the catalogue imports every exercise's reference and checks, hence torch: over a second
of CPU. The admin commands that only order a course's set, title a gradebook's columns, list
the exercises or name their versions ask for this index instead
(``server.catalog.service.catalogue_index``), so that they answer in well under a second. It is a reading of the same files the catalogue loads, never a second source:
when any spec of any configured pack is not written with literal ``slug``, ``title``,
``function_name`` and ``order`` arguments, :func:`read_index` returns None and the caller loads
the catalogue. ``tests/exercises/test_index.py`` checks that the index and the loaded catalogue
agree, for the built-in pack and the scaffold's.

What the index does not do is run the exercises: a pack whose checks fail to import, or whose
points do not add up to 100, is indexed all the same (``serve``, ``worker`` and ``exercises
verify`` load it and say why it fails). A pack that is not there, or holds no exercise, and a
slug in two packs, are found by the index too: it returns None, and the loading says why.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from exercises.packs import PackError, configured_packs, exercise_folders

_FIELDS = ("slug", "title", "function_name", "order")


@dataclass(frozen=True)
class IndexEntry:
    """What an ordered list or a column heading needs of one exercise."""

    slug: str
    title: str
    function_name: str
    order: int
    pack: str
    #: The exercise's folder, as the loaded exercise names it (``Exercise.folder``).
    folder: str


def read_index(served: list[str]) -> list[IndexEntry] | None:
    """The configured packs' exercises (``served``: the service's pack folders) in catalogue
    order, (order, slug); None when a spec cannot be read without running it, a slug repeats, or
    a pack cannot be found or holds no exercise (the catalogue's own loading then says why)."""
    found: dict[str, IndexEntry] = {}
    try:
        folders = [(pack, folder) for pack in configured_packs(served=served) for folder in exercise_folders(pack)]
    except PackError:
        return None
    for pack, folder in folders:
        entry = _entry(folder / "spec.py", pack.name)
        if entry is None or entry.slug in found:
            return None
        found[entry.slug] = entry
    return sorted(found.values(), key=lambda e: (e.order, e.slug))


def _entry(path: Path, pack: str) -> IndexEntry | None:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "ExerciseSpec"
    ]
    if len(calls) != 1 or calls[0].args:
        return None
    given = {k.arg: k.value for k in calls[0].keywords if k.arg in _FIELDS}
    try:
        values = {name: ast.literal_eval(given[name]) for name in _FIELDS}
    except (KeyError, ValueError, TypeError, SyntaxError):
        return None
    text_ok = all(isinstance(values[name], str) and values[name] for name in ("slug", "title", "function_name"))
    if not text_ok or type(values["order"]) is not int:
        return None
    folder = str(path.parent)
    return IndexEntry(values["slug"], values["title"], values["function_name"], values["order"], pack, folder)
