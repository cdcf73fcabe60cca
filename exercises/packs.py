"""Exercise packs: where the catalogue's exercises come from.

A pack is a folder of exercise folders (each in the layout of :mod:`exercises.framework`:
``spec.py``, ``starter.py``, ``reference.py``, ``checks.py``, ``mutants.py``, usually
``faulty.py``). The catalogue is a list of packs, in this order:

1. the built-in pack: the ``exercises`` package itself;
2. every installed distribution's entry point in the group ``ppo_grader.exercises``, whose
   value names a package (``rlhf_course.pack``): that package's folder is the pack;
3. every folder the service is configured with: ``ppo-grader serve --pack DIR`` (or
   ``PPO_GRADER_EXERCISE_PACKS`` in serve's environment) records them in the service's database,
   and every command reads them from there (``server.catalog.packs_config``), never from its shell;
4. every folder of ``PPO_GRADER_EXERCISE_PACKS`` in this process's environment, if any
   (``/srv/packs/a:/srv/packs/b``).

A pack's reference and checks run in the trusted judge: a pack is instructor code, and only the
service's operator names packs (the environment and the installed distributions, never an API
call; docs/security.md). Loading is all or nothing: any pack that fails to import, declares
points that do not add up to 100, or reuses a slug raises :class:`PackError` with one line that
says which file and why, and no catalogue is built.

A pack folder needs no ``__init__.py``: it is imported under a name of its own
(``ppo_grader_packs.p<hash>``), so its exercises import their own modules relatively
(``from .spec import SPEC``) and two packs may hold folders of the same name.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import sys
import traceback
import types
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch-free at import: the CLI names PackError without loading torch
    from exercises.framework import Exercise

#: The environment variable an operator lists pack folders in (``:``-separated).
PACKS_ENV = "PPO_GRADER_EXERCISE_PACKS"
#: The entry-point group installed packs declare.
ENTRY_POINT_GROUP = "ppo_grader.exercises"
#: The files every exercise folder holds.
ROLE_FILES = ("spec.py", "starter.py", "reference.py", "checks.py", "mutants.py")
#: The parent of the names path packs are imported under.
_PACKS_PACKAGE = "ppo_grader_packs"
#: The built-in pack's name, as every message and ``Exercise.pack`` spells it.
BUILTIN = "built-in"


class PackError(RuntimeError):
    """A pack cannot be loaded; the message is one line naming the pack, the file and why."""


@dataclass(frozen=True)
class Pack:
    """One source of exercises: its name (for messages), its folder and its import package."""

    name: str
    root: Path
    package: str

    @property
    def builtin(self) -> bool:
        return self.name == BUILTIN


def builtin_pack() -> Pack:
    """The exercises shipped with the grader."""
    return Pack(BUILTIN, Path(__file__).resolve().parent, "exercises")


def path_pack(path: str | Path) -> Pack:
    """The pack in folder ``path``, importable under a name derived from its resolved path."""
    root = Path(path).expanduser().resolve()
    if not root.is_dir():
        raise PackError(f"exercise pack {path} is not a folder")
    package = f"{_PACKS_PACKAGE}.p{hashlib.sha256(str(root).encode()).hexdigest()[:12]}"
    return Pack(str(root), root, package)


def env_packs(value: str | None = None) -> list[Pack]:
    """The packs of ``PPO_GRADER_EXERCISE_PACKS`` (or of ``value``), in the order listed."""
    raw = os.environ.get(PACKS_ENV, "") if value is None else value
    return [path_pack(part) for part in raw.split(os.pathsep) if part.strip()]


def entry_point_packs() -> list[Pack]:
    """The packs installed distributions declare in the ``ppo_grader.exercises`` group."""
    found = []
    for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        where = f"entry point {ep.name} = {ep.value}"
        try:
            module = importlib.import_module(ep.value)
        except Exception as exc:
            raise PackError(f"exercise pack {where}: {_why(exc, None)}") from None
        paths = list(getattr(module, "__path__", []))
        if not paths:
            raise PackError(f"exercise pack {where}: {ep.value} is a module, not a package (a folder of exercises)")
        found.append(Pack(f"{where} ({paths[0]})", Path(paths[0]).resolve(), ep.value))
    return found


def configured_packs(extra: Iterable[Pack] = (), served: Iterable[str] = ()) -> list[Pack]:
    """The built-in pack, the installed ones, the folders the service is configured with
    (``served``), those of this process's environment, then ``extra`` (verify's ``--pack``); a
    folder listed twice is loaded once."""
    packs = [builtin_pack(), *entry_point_packs()]
    for folder in served:
        try:
            packs.append(path_pack(folder))
        except PackError:
            raise PackError(
                f"exercise pack {folder}, which the service is configured with (in its database), is not a folder "
                "on this machine: run this command where the service runs, or `ppo-grader serve --pack` to change it"
            ) from None
    for pack in [*env_packs(), *extra]:
        if all(p.root != pack.root for p in packs):
            packs.append(pack)
    return packs


def exercise_folders(pack: Pack) -> list[Path]:
    """The pack's exercise folders: its sub-folders holding a ``spec.py``, sorted by name;
    :class:`PackError` for a pack other than the built-in one that holds none."""
    folders = sorted(p for p in pack.root.iterdir() if p.is_dir() and (p / "spec.py").is_file())
    if not folders and not pack.builtin:
        raise PackError(f"exercise pack {pack.name} holds no exercise folder (a sub-folder with a spec.py)")
    return folders


def load_pack(pack: Pack) -> list[Exercise]:
    """Import every exercise of ``pack``; :class:`PackError` on the first that fails."""
    if not pack.builtin and not pack.package.startswith(f"{_PACKS_PACKAGE}."):
        importlib.import_module(pack.package)  # an installed pack: its package is importable already
    elif not pack.builtin:
        register_package(pack)
    return [load_exercise(pack, folder) for folder in exercise_folders(pack)]


def load_exercise(pack: Pack, folder: Path) -> Exercise:
    """Import one exercise folder of ``pack`` and assemble it, or raise :class:`PackError`."""
    where = f"exercise pack {pack.name}: {folder.name}/"
    missing = [f for f in ROLE_FILES if not (folder / f).is_file()]
    if missing:
        raise PackError(f"{where} lacks {', '.join(missing)}")
    from exercises.framework import Exercise

    package = f"{pack.package}.{folder.name}"
    try:
        spec, checks, mutants, reference = (
            importlib.import_module(f"{package}.{role}") for role in ("spec", "checks", "mutants", "reference")
        )
        exercise = Exercise.from_modules(
            str(folder),
            spec,
            checks,
            mutants,
            reference,
            starter=(folder / "starter.py").read_text(encoding="utf-8"),
            reference_source=(folder / "reference.py").read_text(encoding="utf-8"),
        )
    except Exception as exc:
        raise PackError(f"{where}: {_why(exc, folder)}") from None
    exercise.pack = pack.name
    return exercise


def load_catalogue(packs: list[Pack]) -> dict[str, Exercise]:
    """Every exercise of ``packs`` by slug, in catalogue order; all of them or :class:`PackError`.

    A slug defined twice is an error naming both folders and their packs.
    """
    found: dict[str, Exercise] = {}
    for pack in packs:
        for exercise in load_pack(pack):
            first = found.get(exercise.slug)
            if first is not None:
                raise PackError(
                    f"exercise slug {exercise.slug!r} is defined twice: {first.folder} (pack {first.pack}) and "
                    f"{exercise.folder} (pack {exercise.pack}); rename one of them"
                )
            found[exercise.slug] = exercise
    return dict(sorted(found.items(), key=lambda kv: (kv[1].order, kv[0])))


def register_package(pack: Pack) -> None:
    """Make ``pack.package`` an importable package whose folder is the pack's, freshly: modules
    a previous load of the same folder left behind are forgotten, so an edit is read."""
    if _PACKS_PACKAGE not in sys.modules:
        parent = types.ModuleType(_PACKS_PACKAGE, "Exercise packs loaded from configured folders.")
        parent.__path__ = []
        sys.modules[_PACKS_PACKAGE] = parent
    for name in [m for m in sys.modules if m == pack.package or m.startswith(f"{pack.package}.")]:
        del sys.modules[name]
    module = types.ModuleType(pack.package, f"The exercise pack {pack.root}.")
    module.__path__ = [str(pack.root)]
    sys.modules[pack.package] = module
    importlib.invalidate_caches()


def _why(exc: BaseException, folder: Path | None) -> str:
    """One line: the exception and the place in the pack's own files it came from."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"SyntaxError in {exc.filename}:{exc.lineno}: {exc.msg}"
    frames = traceback.extract_tb(exc.__traceback__)
    inside = [f for f in frames if folder is not None and Path(f.filename).resolve().is_relative_to(folder)]
    place = f" at {inside[-1].filename}:{inside[-1].lineno}" if inside else ""
    return f"{type(exc).__name__}{place}: {text}"
