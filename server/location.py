"""Where the server's database is: one answer for ``ppo-grader serve`` and every admin command.

In order: ``PPO_GRADER_DATABASE_URL``; else the file ``serve`` writes at its first start
(``$PPO_GRADER_CONFIG``, default ``$XDG_CONFIG_HOME/ppo-grader/server.json``, holding the
absolute database URL); else the default SQLite file under ``./data/``. So an admin command
run from another folder finds the database the running server uses, says which one, and
refuses to create a new one unless told to (``ppo-grader --init``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import inspect
from sqlalchemy.engine import make_url

from server.config import Settings

ENV_URL = "PPO_GRADER_DATABASE_URL"


@dataclass(frozen=True)
class Located:
    """A database URL and where it came from, in words."""

    url: str
    source: str

    @property
    def shown(self) -> str:
        """The URL with any password hidden, for messages."""
        return make_url(self.url).render_as_string(hide_password=True)


def config_path() -> Path:
    """The file ``serve`` writes at its first start."""
    explicit = os.environ.get("PPO_GRADER_CONFIG")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "ppo-grader" / "server.json"


def absolute(url: str) -> str:
    """``url`` with a relative SQLite path made absolute (against the current folder)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return url
    return parsed.set(database=str(Path(parsed.database).expanduser().resolve())).render_as_string(hide_password=False)


def locate() -> Located:
    """The database to use, and why that one."""
    if os.environ.get(ENV_URL):
        return Located(os.environ[ENV_URL], ENV_URL)
    path = config_path()
    try:
        url = json.loads(path.read_text(encoding="utf-8")).get("database_url")
    except (OSError, ValueError, AttributeError):
        url = None
    if isinstance(url, str) and url:
        return Located(url, str(path))
    return Located(absolute(Settings.model_fields["DATABASE_URL"].default), f"the default (no {ENV_URL}, no {path})")


def remember(url: str) -> Path | None:
    """Write ``url`` (made absolute) to the config file when it holds another one; the path when
    written, None when it held it already or cannot be written."""
    path = config_path()
    wanted = absolute(url)
    try:
        if json.loads(path.read_text(encoding="utf-8")).get("database_url") == wanted:
            return None
    except (OSError, ValueError, AttributeError):
        pass
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"database_url": wanted}, indent=2) + "\n", encoding="utf-8")
    except OSError:
        # A read-only home (a container's unprivileged user) serves all the same: admin
        # commands there get the database from the environment, as the container sets it.
        return None
    return path


def is_initialised(url: str) -> bool:
    """Whether ``url`` names a database the migrations have run on (a SQLite file that is
    missing counts as not initialised, and is not created by asking)."""
    from server.db import make_engine

    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        if not Path(parsed.database).exists():
            return False
    engine = make_engine(url)
    try:
        return "alembic_version" in inspect(engine).get_table_names()
    finally:
        engine.dispose()
