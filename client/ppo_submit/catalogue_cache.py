"""The exercise catalogue kept between commands, so that ``ppo-submit FILE`` matches its file
to an exercise without asking the server first.

``GET /exercises`` answers with an ``ETag``: the version of the caller's catalogue (what is
released to them, each exercise's function). It is kept, with the list, in ``catalogue.json``
beside the login's ``config.json`` (platformdirs' ``user_config_dir("ppo-submit")``, mode
0600), one entry per server and token (the token itself is not stored there, only a digest of
it). A submit matched in the kept list sends its version (``POST /submissions?catalogue=``); a
server whose catalogue is another now stores nothing and answers 409 ``CatalogueChanged``, and
the list is read again (``If-None-Match``: 304 when it had not changed after all). A match that
fails in the kept list is tried again in a fresh one before the error is shown: an exercise
released since is found.

The file is a cache: one that is missing, unreadable, too large or not what this module writes
is ignored (and replaced at the next write), never an error.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

from notebook_format.errors import SourceError

from .api import Client, ClientError, ExerciseSummary

FILE_NAME = "catalogue.json"
#: The file's format; another is ignored.
FORMAT = 1
#: At most this many servers and tokens are kept (the least recently written go first).
MAX_ENTRIES = 8
#: A larger file is not read (a catalogue is a few KiB).
MAX_BYTES = 1024 * 1024

T = TypeVar("T")


def cache_path() -> Path:
    """The cache file's path, beside the login's config file (it may not exist)."""
    from . import config

    return config.config_path().with_name(FILE_NAME)


def entry_key(server: str, token: str) -> str:
    """The entry of one server and token: a digest, so the file holds no token."""
    return hashlib.sha256(f"{server}\n{token}".encode()).hexdigest()[:32]


def _read(path: Path) -> dict[str, Any]:
    try:
        if path.stat().st_size > MAX_BYTES:
            return {}
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("entries"), dict):
        return {}
    return cast(dict[str, Any], data)


def load(key: str, path: Path | None = None) -> tuple[str, list[ExerciseSummary]] | None:
    """(version, exercises) kept for ``key``; None when there is none that can be used."""
    entry = _read(path or cache_path()).get("entries", {}).get(key)
    if not isinstance(entry, dict):
        return None
    version, exercises = entry.get("version"), entry.get("exercises")
    if not isinstance(version, str) or not version or not isinstance(exercises, list):
        return None
    if not all(isinstance(e, dict) and isinstance(e.get("slug"), str) for e in exercises):
        return None
    return version, cast(list[ExerciseSummary], exercises)


def save(key: str, version: str, exercises: list[ExerciseSummary], path: Path | None = None) -> None:
    """Keep ``exercises`` at ``version`` for ``key`` (atomically, mode 0600); a file that cannot
    be written is left as it is (the next command asks the server again)."""
    path = path or cache_path()
    entries = {
        name: entry
        for name, entry in _read(path).get("entries", {}).items()
        if name != key and isinstance(entry, dict) and isinstance(entry.get("version"), str)
    }
    entries[key] = {"version": version, "exercises": exercises}
    kept = dict(list(entries.items())[-MAX_ENTRIES:])
    body = json.dumps({"format": FORMAT, "entries": kept}, separators=(",", ":"))
    if len(body) > MAX_BYTES:
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(body)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)


class Catalogue:
    """The catalogue one command matches in: the kept one when there is one, else (or once it
    proves stale) the server's, read with one conditional request and kept."""

    def __init__(self, client: Client, key: str, path: Path | None = None) -> None:
        self._client = client
        self._key = key
        self._path = path
        self._kept = load(key, path)
        self._fresh = False
        #: The version of the list last handed out (None: the server sent no ``ETag``).
        self.version: str | None = self._kept[0] if self._kept else None

    def exercises(self) -> list[ExerciseSummary]:
        """The kept list, or the server's when none is kept."""
        if self._kept is not None:
            return self._kept[1]
        return self.refresh()

    def refresh(self) -> list[ExerciseSummary]:
        """The server's list now (``If-None-Match`` the kept version: 304 keeps it), kept."""
        etag = self._kept[0] if self._kept else None
        found, version = self._client.catalogue(etag)
        self._fresh = True
        if found is None and self._kept is not None:  # 304: the kept one is current
            return self._kept[1]
        exercises = found or []
        self.version = version
        if version:
            self._kept = (version, exercises)
            save(self._key, version, exercises, self._path)
        else:
            self._kept = None
        return exercises

    def match(self, find: Callable[[list[ExerciseSummary]], T]) -> T:
        """``find(exercises)``; when it fails (no exercise, or several, match the file) in the
        kept list, once more in the server's, whose error is the one shown."""
        try:
            return find(self.exercises())
        except (ClientError, SourceError):
            if self._fresh:
                raise
        return find(self.refresh())
