"""Where the server's database is: one answer per installation, for ``serve`` and every admin command.

An installation is one checkout (or one installed copy) of ppo-grader; its data folder is
``$PPO_GRADER_DATA_DIR``, else ``<checkout>/data/`` (``./data/`` for a copy installed without a
checkout). In order, the database is:

1. ``PPO_GRADER_DATABASE_URL``: this process only, never recorded (a test server started with it
   changes nothing any other command uses);
2. the one recorded in the installation's own ``server.json`` (in its data folder, or
   ``$PPO_GRADER_CONFIG``), written by ``ppo-grader serve --database URL``;
3. the SQLite file ``ppo-grader.db`` in the installation's data folder.

No per-user file is read: two checkouts on one machine never share a database unless told to.
A recorded database that no longer exists is an error (:class:`LocationError`), never a new
empty one, and an admin command refuses a database that was never set up unless ``--init``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import inspect
from sqlalchemy.engine import make_url

from server.db import make_engine
from server.errors import GraderError

ENV_URL = "PPO_GRADER_DATABASE_URL"
ENV_DATA_DIR = "PPO_GRADER_DATA_DIR"
ENV_RECORD = "PPO_GRADER_CONFIG"
#: The file the default database is, in the data folder.
DEFAULT_DB_NAME = "ppo-grader.db"
#: The installation's root: the folder holding the ``server`` package.
_ROOT = Path(__file__).resolve().parent.parent


class LocationError(GraderError):
    """The database cannot be used as located (recorded but gone, or never set up)."""

    status_code = 409


@dataclass(frozen=True)
class Located:
    """A database URL, where it came from (in words), and whether that was the installation's record."""

    url: str
    source: str
    recorded: bool = False

    @property
    def redacted(self) -> str:
        """The URL with any password hidden, for messages."""
        return make_url(self.url).render_as_string(hide_password=True)


def installation_root() -> Path:
    """The checkout (or installed copy) this process runs from."""
    return _ROOT


def data_dir() -> Path:
    """The installation's data folder (not created here)."""
    explicit = os.environ.get(ENV_DATA_DIR)
    if explicit:
        return Path(explicit).expanduser().resolve()
    if (_ROOT / "pyproject.toml").is_file():  # a checkout: its own data/, wherever the command runs
        return _ROOT / "data"
    return Path.cwd().resolve() / "data"  # an installed copy (site-packages): the folder it is run from


def record_path() -> Path:
    """The installation's record of its database (``serve --database`` writes it)."""
    explicit = os.environ.get(ENV_RECORD)
    return Path(explicit) if explicit else data_dir() / "server.json"


def default_url() -> str:
    """The installation's default database: SQLite in its data folder."""
    return f"sqlite:///{data_dir() / DEFAULT_DB_NAME}"


def absolute(url: str) -> str:
    """``url`` with a relative SQLite path made absolute (against the current folder)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return url
    return parsed.set(database=str(Path(parsed.database).expanduser().resolve())).render_as_string(hide_password=False)


def recorded_url() -> str | None:
    """The URL in the installation's record, or None when there is none (or it is unreadable)."""
    try:
        url = json.loads(record_path().read_text(encoding="utf-8")).get("database_url")
    except (OSError, ValueError, AttributeError):
        return None
    return url if isinstance(url, str) and url else None


def locate() -> Located:
    """The database to use, and why that one (see the module docstring)."""
    if os.environ.get(ENV_URL):
        return Located(absolute(os.environ[ENV_URL]), ENV_URL)
    url = recorded_url()
    if url is not None:
        return Located(url, str(record_path()), recorded=True)
    return Located(default_url(), f"this installation's data folder {data_dir()}")


def remember(url: str) -> Path | None:
    """Record ``url`` (made absolute) as this installation's database; the path when written,
    None when it held it already or cannot be written (a read-only data folder)."""
    path = record_path()
    wanted = absolute(url)
    if recorded_url() == wanted:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"database_url": wanted}, indent=2) + "\n", encoding="utf-8")
    except OSError:
        return None
    return path


def _sqlite_file(url: str) -> Path | None:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        return Path(str(parsed.database))
    return None


def is_initialised(url: str) -> bool:
    """Whether ``url`` names a database the migrations have run on (a SQLite file that is
    missing counts as not initialised, and is not created by asking)."""
    file = _sqlite_file(url)
    if file is not None and not file.exists():
        return False
    engine = make_engine(url)
    try:
        return "alembic_version" in inspect(engine).get_table_names()
    finally:
        engine.dispose()


def guarded(*, create: bool) -> Located:
    """The located database, refused with one line when it cannot be what is meant.

    A recorded database that is gone (its SQLite file missing, or a server database with no
    tables) is always refused: it was lost, and a new empty one would hand out tokens and
    grades nobody else sees. Otherwise a database never set up is refused unless ``create``
    (``serve``'s first start, or an admin command's ``--init``).
    """
    where = locate()
    if is_initialised(where.url):
        return where
    if where.recorded:
        raise LocationError(
            f"the database recorded for this installation, {where.redacted} (in {where.source}), no longer exists "
            "or was never set up: restore it, or remove that file to start a new database in "
            f"{data_dir()}"
        )
    if not create:
        raise LocationError(
            f"no ppo-grader database at {where.redacted} (from {where.source}): start `ppo-grader serve` there "
            "first, set PPO_GRADER_DATABASE_URL to the server's database, or pass --init to create one"
        )
    return where
